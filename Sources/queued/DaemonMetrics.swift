import EventQueue
import EventQueueBraze
import EventQueueDelivery
import Metrics
import Prometheus
import Synchronization

/// The daemon's metrics, recorded through swift-metrics into one Prometheus registry that `GET /metrics`
/// renders. Every series is created up front, so a scraper sees every name (at zero) from the first scrape.
///
/// Stored properties are initialized in declaration order: `registry` first, so swift-metrics is bootstrapped
/// before any series below is created.
final class DaemonMetrics: BrazeRequestObserver {
    let registry = DaemonMetrics.bootstrap()
    private let delivered = Metrics.Counter(label: "eventqueue_records_delivered_total")
    private let retried = Metrics.Counter(label: "eventqueue_records_retried_total")
    private let dead = Metrics.Counter(label: "eventqueue_records_dead_total")
    private let enqueued = RisingCounter(label: "eventqueue_records_enqueued_total")
    private let passes = Dictionary(
        uniqueKeysWithValues: DrainResult.allCases.map {
            ($0, Metrics.Counter(label: "eventqueue_passes_total", dimensions: [("result", $0.rawValue)]))
        })
    private let passErrors = Metrics.Counter(label: "eventqueue_passes_total", dimensions: [("result", "error")])
    private let passDuration = Metrics.Timer(label: "eventqueue_pass_duration_seconds")
    private let sinkLatency = Metrics.Timer(label: "eventqueue_sink_batch_duration_seconds")
    private let batchSize = Metrics.Recorder(label: "eventqueue_batch_size", aggregate: true)
    private let pending = Metrics.Gauge(label: "eventqueue_records_pending")
    private let leased = Metrics.Gauge(label: "eventqueue_records_leased")
    private let deadNow = Metrics.Gauge(label: "eventqueue_records_dead")
    private let oldestPendingAge = Metrics.Gauge(label: "eventqueue_oldest_pending_age_seconds")
    private let rememberedKeys = Metrics.Gauge(label: "eventqueue_remembered_keys")
    private let rememberedKeyBytes = Metrics.Gauge(label: "eventqueue_remembered_key_bytes")
    private let erasuresPending = Metrics.Gauge(label: "eventqueue_erasures_pending")
    private let erasuresDead = Metrics.Gauge(label: "eventqueue_erasures_dead")
    private let erasuresUnauthorized = Metrics.Gauge(label: "eventqueue_erasures_unauthorized")
    private let erasuresDelivered = Metrics.Counter(label: "eventqueue_erasures_delivered_total")
    private let heldUsers = Metrics.Gauge(label: "eventqueue_held_users")
    private let recordsInFlight = Metrics.Gauge(label: "eventqueue_records_in_flight")
    private let requestsInFlight = Metrics.Gauge(label: "eventqueue_braze_requests_in_flight")
    private let sendWindow = Metrics.Gauge(label: "eventqueue_braze_send_window")
    private let rateLimitWaits = RisingCounter(label: "eventqueue_braze_rate_limit_waits_total")
    private let rateLimited = RisingCounter(label: "eventqueue_braze_rate_limited_requests_total")
    private let rateLimitRounds = RisingCounter(label: "eventqueue_braze_rate_limit_rounds_total")
    private let rateLimitRemaining = Metrics.Gauge(label: "eventqueue_braze_rate_limit_remaining")
    private let rateLimitLimit = Metrics.Gauge(label: "eventqueue_braze_rate_limit_limit")
    private let rateLimitWaitSeconds = Metrics.Gauge(label: "eventqueue_braze_rate_limit_wait_seconds")
    private let requestLatency = Metrics.Timer(label: "eventqueue_braze_request_duration_seconds")
    private let sinkAvailable = Metrics.Gauge(label: "eventqueue_sink_available")
    private let sinkUnavailableSeconds = Metrics.Gauge(label: "eventqueue_sink_unavailable_seconds")
    private let sinkProbes = CounterFromTotal(label: "eventqueue_sink_probes_total")
    private let lineInUse = Metrics.Gauge(label: "eventqueue_writer_line_in_use")
    private let lineHandoffs = CounterFromTotal(label: "eventqueue_writer_line_handoffs_total")
    private let linePassedOver = CounterFromTotal(label: "eventqueue_writer_line_passed_over_total")
    private let lineRepairs = CounterFromTotal(label: "eventqueue_writer_line_repairs_total")
    private let lineBypasses = CounterFromTotal(label: "eventqueue_writer_line_bypasses_total")
    // The limits' series: pages in use (what the size limit bounds), the limit (0: none), and every
    // record the queue gave up, by any writer process or the daemon: the totals kept in the file, so the counter
    // shows them from the first scrape and never misses what another process gave up.
    private let queueBytes = Metrics.Gauge(label: "eventqueue_queue_bytes")
    private let limitBytes = Metrics.Gauge(label: "eventqueue_queue_limit_bytes")
    private let dropped = ["oldest", "refused", "expired"].map {
        RisingCounter(label: "eventqueue_records_dropped_total", dimensions: [("cause", $0)])
    }

    /// Bootstraps swift-metrics with a Prometheus factory; create one per process.
    init() {
        sinkAvailable.record(1)
    }

    private static func bootstrap() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["eventqueue_pass_duration_seconds"] = [
            .milliseconds(10), .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5),
            .seconds(15), .seconds(60), .seconds(300), .seconds(900),
        ]
        factory.valueHistogramBuckets["eventqueue_batch_size"] = [1, 5, 10, 25, 50, 75, 100, 250, 500, 1000]
        factory.durationHistogramBuckets["eventqueue_braze_request_duration_seconds"] = [
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(150),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30),
        ]
        MetricsSystem.bootstrap(factory)
        return registry
    }

    /// The writers' line, read at scrape time from its file: whether writers wait in line (1) or not (0: no writer
    /// of this release yet, or off), and its counters. A line that silently stopped working shows as 0 here, or as
    /// bypasses and repairs growing.
    func recordWriteLine(_ line: WriteLineReport) {
        guard case .inUse = line.state else {
            lineInUse.record(0)
            return
        }
        lineInUse.record(1)
        lineHandoffs.advance(to: line.handoffs)
        linePassedOver.advance(to: line.passedOver)
        lineRepairs.advance(to: line.repairs)
        lineBypasses.advance(to: line.bypasses)
    }

    /// Whether the sink is available (1) or not (0), for how long it has not been, and the probes sent, read at
    /// scrape time. `EventQueueSinkUnavailable` fires on the first after 15 minutes.
    func recordSinkAvailability(_ snapshot: SinkAvailability.Snapshot) {
        let unavailable = snapshot.state == .unavailable
        sinkAvailable.record(unavailable ? 0 : 1)
        let seconds = unavailable ? max(0, Double(WallClock.nowMilliseconds() - snapshot.sinceMilliseconds) / 1000) : 0
        sinkUnavailableSeconds.record(seconds)
        sinkProbes.advance(to: UInt64(max(0, snapshot.probesTotal)))
    }

    /// `BrazeRequestObserver`: the latency of every `/users/track` request, answered or not.
    func requestFinished(status: Int?, latency: Duration) {
        requestLatency.record(duration: latency)
    }

    /// The Braze sink's pacing, read at scrape time.
    func recordRate(_ status: BrazeRateStatus) {
        requestsInFlight.record(status.requestsInFlight)
        sendWindow.record(status.window)
        rateLimitWaits.advance(to: Int64(status.rateLimitWaits))
        rateLimited.advance(to: Int64(status.rateLimitedRequests))
        rateLimitRounds.advance(to: Int64(status.rateLimitRounds))
        // -1 until an answer carried the headers: a scraper tells "unknown" from "none left".
        rateLimitRemaining.record(status.remaining ?? -1)
        rateLimitLimit.record(status.limit ?? -1)
        let waiting = status.waitingUntilMilliseconds.map { max(0, $0 - WallClock.nowMilliseconds()) } ?? 0
        rateLimitWaitSeconds.record(Double(waiting) / 1000)
    }

    func recordInFlight(_ records: Int) {
        recordsInFlight.record(records)
    }

    func recordPass(_ summary: DrainSummary, duration: Duration) {
        delivered.increment(by: summary.delivered)
        erasuresDelivered.increment(by: summary.erased)
        retried.increment(by: summary.retried)
        dead.increment(by: summary.dead)
        passes[summary.result]?.increment()
        passDuration.record(duration: duration)
        if let remaining = summary.remaining { recordStats(remaining) }
    }

    func recordFailedPass(duration: Duration) {
        passErrors.increment()
        passDuration.record(duration: duration)
    }

    func recordSinkBatch(size: Int, duration: Duration) {
        batchSize.record(size)
        sinkLatency.record(duration: duration)
    }

    func recordStats(_ stats: QueueStats) {
        pending.record(stats.pending)
        leased.record(stats.leased)
        deadNow.record(stats.dead)
        // 0 with nothing pending: an alert on age then stays quiet.
        oldestPendingAge.record(stats.oldestPendingAgeSeconds ?? 0)
        rememberedKeys.record(stats.rememberedKeys)
        rememberedKeyBytes.record(stats.rememberedKeyBytes)
        queueBytes.record(stats.queueBytes)
        limitBytes.record(stats.limits?.maxQueueBytes ?? 0)
        for (counter, total) in zip(dropped, [stats.drops.oldest, stats.drops.refused, stats.drops.expired]) {
            counter.advance(to: total)
        }
    }

    /// Erasures waiting to be sent (pending or in flight) and dead ones, from stats that counted them (a scrape's;
    /// a pass's stats do not, and must not zero these gauges).
    func recordErasures(_ stats: QueueStats) {
        erasuresPending.record(stats.erasuresPending)
        erasuresDead.record(stats.erasuresDead)
        erasuresUnauthorized.record(stats.erasuresUnauthorized)
        heldUsers.record(stats.heldUsers)
    }

    /// Brings the enqueued counter up to the highest id ever assigned (read from the file at scrape time).
    func recordHighestID(_ highest: Int64) {
        enqueued.advance(to: highest)
    }
}

/// A Prometheus counter fed from a running total kept elsewhere (the writers' line's file): it grows by what the
/// total grew since the last look. A total that went down was reset (the line's page repaired) and counts from
/// zero again; a jump larger than any honest scrape interval sees is a group member's write, and is not counted.
final class CounterFromTotal: Sendable {
    private let counter: Metrics.Counter
    private let last = Mutex<UInt64?>(nil)
    static let largestStep: UInt64 = 1 << 32

    init(label: String) {
        counter = Metrics.Counter(label: label)
    }

    func advance(to total: UInt64) {
        let grown = last.withLock { last -> UInt64 in
            defer { last = total }
            guard let previous = last else { return 0 }
            return total >= previous ? total - previous : total
        }
        if grown > 0, grown < Self.largestStep { counter.increment(by: Int64(grown)) }
    }
}

/// A Prometheus counter that follows a total that only grows (a sink's count of 429s, the highest id, the drops in
/// the file): it grows by what the total rose above the highest seen before, from zero.
final class RisingCounter: Sendable {
    private let counter: Metrics.Counter
    private let highest = Mutex<Int64>(0)

    init(label: String, dimensions: [(String, String)] = []) {
        counter = Metrics.Counter(label: label, dimensions: dimensions)
    }

    func advance(to total: Int64) {
        let grown = highest.withLock { highest -> Int64 in
            defer { highest = max(highest, total) }
            return max(0, total - highest)
        }
        if grown > 0 { counter.increment(by: grown) }
    }
}
