import EventQueue
import Logging

/// The limits recorded in the file are enforced at a pass's start and end (`QueueAdmin.enforceLimits`), so the
/// file is back under its limit within a pass whoever wrote it. Once per pass, what every writer dropped or
/// refused since the pass before (the totals live in the file) is logged, one warning per cause.
extension Drainer {
    /// Enforces the recorded limits; at a pass's end logs the drops since the last pass.
    func enforceLimits(atPassStart: Bool) async throws(QueueError) {
        let clock = self.clock
        let (enforcement, drops) = try await store.withConsumer {
            consumer throws(QueueError) -> (LimitEnforcement, (total: QueueDrops, grown: QueueDrops)?) in
            let admin = consumer.admin
            if atPassStart { try admin.watchDrops() }
            let enforcement = try admin.enforceLimits(now: clock.wallMilliseconds(), boot: clock.bootClock)
            return (enforcement, atPassStart ? nil : try admin.dropsSinceLastLook())
        }
        if let drops {
            // One warning per cause that grew, with its count and the total since the file was created.
            let size = ("max_queue_bytes", enforcement.limits?.maxQueueBytes ?? 0)
            let causes: [(count: KeyPath<QueueDrops, Int64>, message: Logger.Message, limit: (String, Int64))] = [
                (
                    \.oldest,
                    "dropped the oldest records to keep the queue within its size limit (--when-full drop-oldest)", size
                ),
                (\.refused, "refused records at enqueue: the queue was at its size limit (--when-full refuse)", size),
                (
                    \.expired,
                    "expired records pending longer than the max age: they are dead letters (queuectl dead list)",
                    ("max_age_seconds", enforcement.limits?.maxAgeSeconds ?? 0)
                ),
            ]
            for cause in causes where drops.grown[keyPath: cause.count] > 0 {
                logger.warning(
                    cause.message,
                    metadata: [
                        "count": "\(drops.grown[keyPath: cause.count])",
                        "total": "\(drops.total[keyPath: cause.count])",
                        cause.limit.0: "\(cause.limit.1)",
                    ])
            }
        }
        if !atPassStart, enforcement.overLimit, let limits = enforcement.limits {
            let message =
                limits.whenFull == .refuse
                ? "the queue is above its size limit: writers of this release refuse records until deliveries "
                    + "make room (--when-full refuse never drops what was accepted)"
                : "the queue is above its size limit and nothing is left to drop (records in delivery, erasures, "
                    + "remembered idempotency keys)"
            logger.warning(
                "\(message)",
                metadata: [
                    "queue_bytes": "\(enforcement.queueBytes)", "max_queue_bytes": "\(limits.maxQueueBytes)",
                ])
        }
    }
}
