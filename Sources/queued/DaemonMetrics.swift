import EventQueue
import EventQueueBraze
import EventQueueDelivery
import Metrics
import Prometheus
import Synchronization

/// The daemon's metrics, recorded through swift-metrics into one Prometheus registry that `GET /metrics`
/// renders. Every series is created up front, so a scraper sees every name (at zero) from the first scrape.
final class DaemonMetrics: BrazeRequestObserver {
    let registry: PrometheusCollectorRegistry
    private let delivered: Metrics.Counter
    private let retried: Metrics.Counter
    private let dead: Metrics.Counter
    private let enqueued: Metrics.Counter
    private let passes: [DrainResult: Metrics.Counter]
    private let passErrors: Metrics.Counter
    private let passDuration: Metrics.Timer
    private let sinkLatency: Metrics.Timer
    private let batchSize: Metrics.Recorder
    private let pending: Metrics.Gauge
    private let leased: Metrics.Gauge
    private let deadNow: Metrics.Gauge
    private let oldestPendingAge: Metrics.Gauge
    private let rememberedKeys: Metrics.Gauge
    private let rememberedKeyBytes: Metrics.Gauge
    private let erasuresPending: Metrics.Gauge
    private let erasuresDead: Metrics.Gauge
    private let erasuresUnauthorized: Metrics.Gauge
    private let erasuresDelivered: Metrics.Counter
    /// Users held back by a dead erasure or identity call (`QueueStats.heldUsers`).
    private let heldUsers: Metrics.Gauge
    private let recordsInFlight: Metrics.Gauge
    private let requestsInFlight: Metrics.Gauge
    private let sendWindow: Metrics.Gauge
    private let rateLimitWaits: Metrics.Counter
    private let rateLimited: Metrics.Counter
    private let rateLimitRounds: Metrics.Counter
    private let rateLimitRemaining: Metrics.Gauge
    private let rateLimitLimit: Metrics.Gauge
    private let rateLimitWaitSeconds: Metrics.Gauge
    private let lastSeenRateLimited = Mutex<(answers: Int, rounds: Int)>((0, 0))
    private let requestLatency: Metrics.Timer
    private let lastSeenWaits = Mutex<Int>(0)
    /// The highest record id seen at the last scrape: the enqueued counter grows by the difference.
    private let lastSeenID = Mutex<Int64>(0)
    private let sinkAvailable: Metrics.Gauge
    private let sinkUnavailableSeconds: Metrics.Gauge
    private let sinkProbes: CounterFromTotal
    private let lineInUse: Metrics.Gauge
    private let lineHandoffs: CounterFromTotal
    private let linePassedOver: CounterFromTotal
    private let lineRepairs: CounterFromTotal
    private let lineBypasses: CounterFromTotal
    private let limits: LimitMetrics

    /// Bootstraps swift-metrics with a Prometheus factory; call once per process.
    init() {
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
        self.registry = registry
        delivered = Metrics.Counter(label: "eventqueue_records_delivered_total")
        retried = Metrics.Counter(label: "eventqueue_records_retried_total")
        dead = Metrics.Counter(label: "eventqueue_records_dead_total")
        enqueued = Metrics.Counter(label: "eventqueue_records_enqueued_total")
        var passes: [DrainResult: Metrics.Counter] = [:]
        for result in DrainResult.allCases {
            passes[result] = Metrics.Counter(
                label: "eventqueue_passes_total", dimensions: [("result", result.rawValue)])
        }
        self.passes = passes
        passErrors = Metrics.Counter(label: "eventqueue_passes_total", dimensions: [("result", "error")])
        passDuration = Metrics.Timer(label: "eventqueue_pass_duration_seconds")
        sinkLatency = Metrics.Timer(label: "eventqueue_sink_batch_duration_seconds")
        batchSize = Metrics.Recorder(label: "eventqueue_batch_size", aggregate: true)
        pending = Metrics.Gauge(label: "eventqueue_records_pending")
        leased = Metrics.Gauge(label: "eventqueue_records_leased")
        deadNow = Metrics.Gauge(label: "eventqueue_records_dead")
        oldestPendingAge = Metrics.Gauge(label: "eventqueue_oldest_pending_age_seconds")
        rememberedKeys = Metrics.Gauge(label: "eventqueue_remembered_keys")
        rememberedKeyBytes = Metrics.Gauge(label: "eventqueue_remembered_key_bytes")
        erasuresPending = Metrics.Gauge(label: "eventqueue_erasures_pending")
        erasuresDead = Metrics.Gauge(label: "eventqueue_erasures_dead")
        erasuresUnauthorized = Metrics.Gauge(label: "eventqueue_erasures_unauthorized")
        erasuresDelivered = Metrics.Counter(label: "eventqueue_erasures_delivered_total")
        heldUsers = Metrics.Gauge(label: "eventqueue_held_users")
        recordsInFlight = Metrics.Gauge(label: "eventqueue_records_in_flight")
        requestsInFlight = Metrics.Gauge(label: "eventqueue_braze_requests_in_flight")
        sendWindow = Metrics.Gauge(label: "eventqueue_braze_send_window")
        rateLimitWaits = Metrics.Counter(label: "eventqueue_braze_rate_limit_waits_total")
        rateLimited = Metrics.Counter(label: "eventqueue_braze_rate_limited_requests_total")
        rateLimitRounds = Metrics.Counter(label: "eventqueue_braze_rate_limit_rounds_total")
        rateLimitRemaining = Metrics.Gauge(label: "eventqueue_braze_rate_limit_remaining")
        rateLimitLimit = Metrics.Gauge(label: "eventqueue_braze_rate_limit_limit")
        rateLimitWaitSeconds = Metrics.Gauge(label: "eventqueue_braze_rate_limit_wait_seconds")
        requestLatency = Metrics.Timer(label: "eventqueue_braze_request_duration_seconds")
        sinkAvailable = Metrics.Gauge(label: "eventqueue_sink_available")
        sinkAvailable.record(1)
        sinkUnavailableSeconds = Metrics.Gauge(label: "eventqueue_sink_unavailable_seconds")
        sinkProbes = CounterFromTotal(label: "eventqueue_sink_probes_total")
        lineInUse = Metrics.Gauge(label: "eventqueue_writer_line_in_use")
        lineHandoffs = CounterFromTotal(label: "eventqueue_writer_line_handoffs_total")
        linePassedOver = CounterFromTotal(label: "eventqueue_writer_line_passed_over_total")
        lineRepairs = CounterFromTotal(label: "eventqueue_writer_line_repairs_total")
        lineBypasses = CounterFromTotal(label: "eventqueue_writer_line_bypasses_total")
        limits = LimitMetrics()
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

    /// Whether the sink is available (1) or not (0), for how long it has not been, and the probes sent (issue 30),
    /// read at scrape time. `EventQueueSinkUnavailable` fires on the first after 15 minutes.
    func recordSinkAvailability(_ snapshot: SinkAvailability.Snapshot) {
        let unavailable = snapshot.state == .unavailable
        sinkAvailable.record(unavailable ? 0 : 1)
        let seconds = unavailable ? max(0, Double(WallClock.nowMilliseconds() - snapshot.sinceMilliseconds) / 1000) : 0
        sinkUnavailableSeconds.record(seconds)
        sinkProbes.advance(to: UInt64(max(0, snapshot.probesTotal)))
    }

    /// `BrazeRequestObserver`: the latency of every `/users/track` request, answered or not.
    func requestFinished(status: Int?, latency: Duration) {
        requestLatency.recordNanoseconds(Self.nanoseconds(latency))
    }

    /// The Braze sink's pacing, read at scrape time.
    func recordRate(_ status: BrazeRateStatus) {
        requestsInFlight.record(status.requestsInFlight)
        sendWindow.record(status.window)
        let grown = lastSeenWaits.withLock { last -> Int in
            let grown = max(0, status.rateLimitWaits - last)
            last = max(last, status.rateLimitWaits)
            return grown
        }
        if grown > 0 { rateLimitWaits.increment(by: grown) }
        let (answers, rounds) = lastSeenRateLimited.withLock { last -> (Int, Int) in
            let grown = (
                max(0, status.rateLimitedRequests - last.answers), max(0, status.rateLimitRounds - last.rounds)
            )
            last = (max(last.answers, status.rateLimitedRequests), max(last.rounds, status.rateLimitRounds))
            return grown
        }
        if answers > 0 { rateLimited.increment(by: answers) }
        if rounds > 0 { rateLimitRounds.increment(by: rounds) }
        // -1 until an answer carried the headers: a scraper tells "unknown" from "none left".
        rateLimitRemaining.record(status.remaining ?? -1)
        rateLimitLimit.record(status.limit ?? -1)
        let waiting = status.waitingUntilMilliseconds.map { max(0, $0 - WallClock.nowMilliseconds()) } ?? 0
        rateLimitWaitSeconds.record(Double(waiting) / 1000)
    }

    /// Records handed to the sink and not settled yet, from the pass's progress.
    func recordInFlight(_ records: Int) {
        recordsInFlight.record(records)
    }

    func recordPass(_ summary: DrainSummary, duration: Duration) {
        delivered.increment(by: summary.delivered)
        erasuresDelivered.increment(by: summary.erased)
        retried.increment(by: summary.retried)
        dead.increment(by: summary.dead)
        passes[summary.result]?.increment()
        passDuration.recordNanoseconds(Self.nanoseconds(duration))
        if let remaining = summary.remaining { recordStats(remaining) }
    }

    func recordFailedPass(duration: Duration) {
        passErrors.increment()
        passDuration.recordNanoseconds(Self.nanoseconds(duration))
    }

    func recordSinkBatch(size: Int, duration: Duration) {
        batchSize.record(size)
        sinkLatency.recordNanoseconds(Self.nanoseconds(duration))
    }

    func recordStats(_ stats: QueueStats) {
        pending.record(stats.pending)
        leased.record(stats.leased)
        deadNow.record(stats.dead)
        // 0 with nothing pending: an alert on age then stays quiet.
        oldestPendingAge.record(stats.oldestPendingAgeSeconds ?? 0)
        rememberedKeys.record(stats.rememberedKeys)
        rememberedKeyBytes.record(stats.rememberedKeyBytes)
        limits.record(stats)
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
        let grown = lastSeenID.withLock { last -> Int64 in
            let grown = max(0, highest - last)
            last = max(last, highest)
            return grown
        }
        if grown > 0 { enqueued.increment(by: grown) }
    }

    func render() -> String {
        registry.emitToString()
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
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
