import EventQueue
import Metrics
import Synchronization

/// The limits' series (issue 30), fed from the queue file at every scrape and after every pass:
/// `eventqueue_records_dropped_total{cause="oldest"|"refused"|"expired"}` (every record the queue gave up, by any
/// writer process or the daemon: the totals in the file, so the counter shows them from the first scrape and never
/// misses what another process gave up), `eventqueue_queue_bytes` (pages in use, what the size limit bounds) and
/// `eventqueue_queue_limit_bytes` (0: no limit). The age of the oldest pending record is
/// `eventqueue_oldest_pending_age_seconds`, as before.
final class LimitMetrics: Sendable {
    private let dropped: [(cause: String, counter: Metrics.Counter)]
    private let lastSeen = Mutex<[String: Int64]>([:])
    private let queueBytes = Metrics.Gauge(label: "eventqueue_queue_bytes")
    private let limitBytes = Metrics.Gauge(label: "eventqueue_queue_limit_bytes")

    init() {
        dropped = ["oldest", "refused", "expired"].map {
            ($0, Metrics.Counter(label: "eventqueue_records_dropped_total", dimensions: [("cause", $0)]))
        }
    }

    func record(_ stats: QueueStats) {
        queueBytes.record(stats.queueBytes)
        limitBytes.record(stats.limits?.maxQueueBytes ?? 0)
        let totals = ["oldest": stats.drops.oldest, "refused": stats.drops.refused, "expired": stats.drops.expired]
        let grown = lastSeen.withLock { last -> [String: Int64] in
            var grown: [String: Int64] = [:]
            for (cause, total) in totals {
                grown[cause] = max(0, total - (last[cause] ?? 0))
                last[cause] = max(last[cause] ?? 0, total)
            }
            return grown
        }
        for (cause, counter) in dropped {
            if let count = grown[cause], count > 0 { counter.increment(by: count) }
        }
    }
}
