import EventQueueBraze
import EventQueueDelivery
import Synchronization

/// Wraps the configured sink to time every batch (metrics) and remember whether the destination is healthy
/// (status), without the sink itself knowing about either; and says what the control routes show of it.
final class MeasuredSink: Sink {
    private let base: any Sink
    private let metrics: DaemonMetrics
    private let health = Mutex(SinkHealth())
    private let braze: BrazeSink?

    init(_ base: any Sink, metrics: DaemonMetrics) {
        self.base = base
        self.metrics = metrics
        braze = base as? BrazeSink
    }

    /// The Braze sink's rate-limit state; `nil` for a file or `null`.
    func rateStatus() async -> BrazeRateStatus? { await braze?.rateStatus() }

    var name: String { base.name }
    var maxConcurrentDeliveries: Int { base.maxConcurrentDeliveries }
    var recordsPerRequest: Int? { base.recordsPerRequest }

    func reopen() { base.reopen() }

    var currentHealth: SinkHealth { health.withLock { $0 } }

    /// Erasures go to the configured sink's own `erase` (the protocol's default would refuse them all).
    func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
        await base.erase(erasures)
    }

    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        let clock = ContinuousClock()
        let start = clock.now
        let report = await base.deliver(batch)
        metrics.recordSinkBatch(size: batch.count, duration: clock.now - start)
        var problem: String? = report.halt?.description
        if problem == nil, !batch.isEmpty {
            let retries = report.outcomes.values.compactMap { outcome -> String? in
                if case .retry(let reason, _, _) = outcome { return reason }
                return nil
            }
            if retries.count == batch.count { problem = retries.first }
        }
        health.withLock { health in
            health.healthy = problem == nil
            if let problem { health.lastError = problem }
        }
        return report
    }
}

/// How the sink did lately, for `GET /status`.
struct SinkHealth: Sendable {
    var healthy = true
    var lastError: String?
}
