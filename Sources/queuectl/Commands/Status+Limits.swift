import EventQueue

/// `queuectl status`'s lines for the limits (issue 30): the size against the limit, the max age, and what the queue
/// gave up (`dropped`, for good: every writer process and the daemon, since the file was created).
extension Status {
    static func limitLines(_ stats: QueueStats) -> [String] {
        let limits = stats.limits ?? QueueLimits()
        var size = "\(stats.queueBytes) bytes in use"
        if limits.maxQueueBytes > 0 {
            let percent = Int((Double(stats.queueBytes) * 100 / Double(limits.maxQueueBytes)).rounded())
            size += " of a \(limits.maxQueueBytes)-byte limit (\(percent) %); when full: \(limits.whenFull.rawValue)"
        } else {
            size += "; no size limit"
        }
        let age =
            limits.maxAgeSeconds > 0
            ? "\(formatSeconds(Double(limits.maxAgeSeconds))) (a pending record older becomes a dead letter)"
            : "none (records are kept until delivered)"
        let recorded = stats.limits == nil ? " (no daemon has recorded limits in this file)" : ""
        return [
            "queue size:     " + size + recorded,
            "max age:        " + age,
            "dropped:        oldest \(stats.drops.oldest), refused \(stats.drops.refused), expired "
                + "\(stats.drops.expired) (since the file was created)",
        ]
    }
}
