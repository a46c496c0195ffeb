import EventQueue

/// Whether the sink is up, as the drain loop sees it: the state machine of issue 30, point 2, as a value. Time
/// comes in as an argument (`Moment`); nothing here reads a clock, sleeps or logs (`SinkAvailabilityMonitor`
/// does, around it), so every transition is tested on numbers.
///
/// ```
///             failure (failuresInARow < policy.failuresBeforeUnavailable)
///             ┌────┐
///             ▼    │          a few transient failures in a row, or the sink declares itself down
///        available ─┴───────────────────────────────────────────────────────────► unavailable
///             ▲                                                                    │   ▲  │
///             │   any answer (a delivery, a refusal, a 429, even a 401)            │   │  │ a probe fails:
///             └────────────────────────────────────────────────────────────────────┘   │  │ the next one after
///                                                                                       └──┘ 5, 10, 20, 40, 60 s…
/// ```
///
/// - **Available.** Everything goes out as usual. A delivery that fails for the destination's sake
///   (`RetryCause.destination`) counts one failure; any answer resets the count.
/// - **Unavailable**, after `failuresBeforeUnavailable` failures in a row (a sink that halts itself as
///   `.unavailable`, a file whose disk is full, at once). No claims but a probe's: one small batch (the oldest
///   claimable records, one request's worth), one probe at a time, the first `firstProbeDelay` after the sink went
///   down, then on a doubling backoff capped at `longestProbeDelay`, each with up to `jitterShare` added so that
///   a fleet does not probe in step. Once the outage is long a probe goes out at most once a minute.
/// - **A launch** (`requestProbe`) brings the next probe forward to now: an app's launch is often the first sign
///   that the network is back. Never closer than `probeSpacing` to the last probe, so launches in a storm cannot
///   become a storm of requests (the outside check of issue 30 asks for at most about one request per 5 s).
/// - **Back.** Any answer, from a probe or from a request that was in flight when the sink went down, makes the
///   sink available again at once: the pass claims at full speed (within the rate policy of issue 20) instead of
///   waiting out each record's backoff, since transient failures gave the records none.
///
/// Why a 429 is an answer, not a failure: it is back-pressure from a destination that is up. Its waits belong to
/// the Braze rate policy (`Retry-After`, `X-RateLimit-Reset`), which already holds every request; treating it as
/// an outage would add a probe backoff on top of the window's own wait.
public struct SinkAvailability: Sendable {
    /// The thresholds and waits. The defaults keep an outage at about one request per 5 s at first and one per
    /// minute once long, and a recovery seen within a minute and a quarter without a launch (at once with one).
    public struct Policy: Sendable, Hashable {
        /// Transient failures in a row after which the sink is unavailable. 3: a lone 5xx among thousands of
        /// requests (Braze's own incidents, or 4 % in the soak test) is retried at once and costs nothing, while
        /// an outage stops the pass after a handful of requests instead of walking the whole backlog.
        public var failuresBeforeUnavailable: Int
        /// The wait before the first probe.
        public var firstProbeDelay: Duration
        /// The longest wait between two probes (before jitter).
        public var longestProbeDelay: Duration
        /// Up to this share of each wait is added at random.
        public var jitterShare: Double
        /// No probe starts sooner than this after the last one, whatever launches ask.
        public var probeSpacing: Duration

        public init(
            failuresBeforeUnavailable: Int = 3, firstProbeDelay: Duration = .seconds(5),
            longestProbeDelay: Duration = .seconds(60), jitterShare: Double = 0.25, probeSpacing: Duration = .seconds(5)
        ) {
            self.failuresBeforeUnavailable = max(1, failuresBeforeUnavailable)
            self.firstProbeDelay = max(.milliseconds(1), firstProbeDelay)
            self.longestProbeDelay = max(self.firstProbeDelay, longestProbeDelay)
            self.jitterShare = min(max(0, jitterShare), 1)
            self.probeSpacing = max(.zero, probeSpacing)
        }
    }

    public enum State: String, Sendable, Hashable {
        case available, unavailable
    }

    /// What the drain loop may do now.
    public enum Admission: Sendable, Hashable {
        /// Claim and deliver as usual.
        case open
        /// Send one probe: one small batch, alone.
        case probe
        /// Claim nothing (the sink is unavailable, and the next probe is not due, or one is in flight).
        case closed
    }

    /// What one settled delivery said about the destination.
    public struct Signal: Sendable, Hashable {
        /// The destination answered something (a delivery, a refusal, a 429, a misconfiguration).
        public var answered: Bool
        /// It failed for the destination's sake, with this reason (after the answers, when both).
        public var failure: String?
        /// The sink declared itself down (`SinkHalt.Kind.unavailable`): unavailable at once.
        public var declaredDown: Bool
        /// The delivery was the probe.
        public var probe: Bool

        public init(answered: Bool, failure: String? = nil, declaredDown: Bool = false, probe: Bool = false) {
            self.answered = answered
            self.failure = failure
            self.declaredDown = declaredDown
            self.probe = probe
        }
    }

    /// The state as status, metrics and logs show it.
    public struct Snapshot: Sendable, Hashable {
        public var state: State
        /// Since when (UTC Unix milliseconds) the state holds; the monitor's creation for the first one.
        public var sinceMilliseconds: Int64
        /// The failure that made the sink unavailable, or the last probe's; the last transient failure while
        /// available.
        public var lastError: String?
        /// When the next probe may go (UTC Unix milliseconds); `nil` while available.
        public var nextProbeAtMilliseconds: Int64?
        /// Probes sent during this outage (0 while available).
        public var probes: Int
        /// Probes sent since the monitor was created (a counter for `/metrics`).
        public var probesTotal: Int
        /// Transient failures in a row (reset by any answer).
        public var failuresInARow: Int
        /// A probe is in flight.
        public var probing: Bool
    }

    /// How the state changed on a signal, for the monitor's logs.
    public enum Transition: Sendable, Hashable {
        case becameUnavailable
        case becameAvailable(unavailableMilliseconds: Int64, probes: Int)
    }

    public let policy: Policy
    public private(set) var state = State.available
    private var sinceMilliseconds: Int64
    private var lastError: String?
    private var failuresInARow = 0
    private var probes = 0
    private var probesTotal = 0
    /// Probes that failed in this outage: the exponent of the backoff.
    private var failedProbes = 0
    private var nextProbe: (monotonic: Duration, wallMilliseconds: Int64)?
    private var lastProbeStart: Duration?
    private var probeInFlight = false
    private var random: SplitMix64

    public init(policy: Policy = Policy(), at now: Moment, seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        self.policy = policy
        sinceMilliseconds = now.wallMilliseconds
        random = SplitMix64(seed: seed)
    }

    public var snapshot: Snapshot {
        Snapshot(
            state: state, sinceMilliseconds: sinceMilliseconds, lastError: lastError,
            nextProbeAtMilliseconds: state == .unavailable ? nextProbe?.wallMilliseconds : nil, probes: probes,
            probesTotal: probesTotal, failuresInARow: failuresInARow, probing: probeInFlight)
    }

    /// The monotonic time of the next probe while unavailable, else `nil`.
    public var nextProbeAt: Duration? { state == .unavailable ? nextProbe?.monotonic : nil }

    /// What the drain loop may do at `now`.
    public func admission(at now: Moment) -> Admission {
        guard state == .unavailable else { return .open }
        guard !probeInFlight, let nextProbe, nextProbe.monotonic <= now.monotonic else { return .closed }
        return .probe
    }

    /// A launch: the next probe goes now, or `probeSpacing` after the last one if that is later. Nothing while
    /// available.
    public mutating func requestProbe(at now: Moment) {
        guard state == .unavailable else { return }
        var at = now.monotonic
        if let lastProbeStart { at = max(at, lastProbeStart + policy.probeSpacing) }
        if let scheduled = nextProbe, scheduled.monotonic <= at { return }
        nextProbe = (at, now.wallMilliseconds + Self.milliseconds(at - now.monotonic))
    }

    /// A pass starts: no probe of this drainer can be in flight (one pass at a time), whatever an earlier pass that
    /// failed on a queue error left behind; a probe flag left set would close the sink for good.
    public mutating func passStarting() {
        probeInFlight = false
    }

    /// The probe (admitted by `admission`) is on its way.
    public mutating func probeStarted(at now: Moment) {
        guard state == .unavailable else { return }
        probeInFlight = true
        probes += 1
        probesTotal += 1
        lastProbeStart = now.monotonic
    }

    /// A probe was due but nothing was claimable to send: with nothing at stake, the sink is taken to be available
    /// again, and the next delivery tells (a few failures in a row make it unavailable again). Keeping it
    /// unavailable would leave status saying so for as long as the queue stays empty, and wake for probes that
    /// have nothing to send.
    public mutating func nothingToProbe(at now: Moment) -> Transition? {
        probeInFlight = false
        return record(Signal(answered: true), at: now)
    }

    /// Learns from one settled delivery. Returns the transition, if the state changed.
    public mutating func record(_ signal: Signal, at now: Moment) -> Transition? {
        if signal.probe { probeInFlight = false }
        var transition: Transition?
        if signal.answered {
            failuresInARow = 0
            if state == .unavailable {
                transition = .becameAvailable(
                    unavailableMilliseconds: max(0, now.wallMilliseconds - sinceMilliseconds), probes: probes)
                state = .available
                sinceMilliseconds = now.wallMilliseconds
                (probes, failedProbes, nextProbe, lastProbeStart) = (0, 0, nil, nil)
            }
        }
        guard let failure = signal.failure else { return transition }
        lastError = failure
        failuresInARow += 1
        switch state {
        case .available:
            guard signal.declaredDown || failuresInARow >= policy.failuresBeforeUnavailable else { return transition }
            state = .unavailable
            sinceMilliseconds = now.wallMilliseconds
            (probes, failedProbes) = (0, 0)
            schedule(after: policy.firstProbeDelay, at: now)
            return .becameUnavailable
        case .unavailable:
            // A request that was in flight when the sink went down says nothing new; a probe's failure moves the
            // next one further out.
            if signal.probe {
                failedProbes += 1
                schedule(after: backoff(afterFailedProbes: failedProbes), at: now)
            }
            return transition
        }
    }

    /// The wait after `failed` failed probes, before jitter: `firstProbeDelay` doubled once per failed probe,
    /// capped at `longestProbeDelay` (5, 10, 20, 40, 60, 60 s … by default).
    public func backoff(afterFailedProbes failed: Int) -> Duration {
        let first = Self.milliseconds(policy.firstProbeDelay)
        let longest = Self.milliseconds(policy.longestProbeDelay)
        let (scaled, overflow) = first.multipliedReportingOverflow(by: Int64(1) << min(max(failed, 0), 40))
        return .milliseconds(overflow ? longest : min(longest, scaled))
    }

    private mutating func schedule(after wait: Duration, at now: Moment) {
        let base = Self.milliseconds(wait)
        let most = Int64(Double(base) * policy.jitterShare)
        let jitter = most > 0 ? Int64(random.next() % UInt64(most + 1)) : 0
        var at = now.monotonic + .milliseconds(base + jitter)
        if let lastProbeStart { at = max(at, lastProbeStart + policy.probeSpacing) }
        nextProbe = (at, now.wallMilliseconds + Self.milliseconds(at - now.monotonic))
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }
}
