import EventQueue

/// Whether the sink is up, as the drain loop sees it: a state machine, as a value. Time comes in as an argument
/// (`Moment`); nothing here reads a clock, sleeps or logs (`SinkAvailabilityMonitor` does), so every transition is
/// tested on numbers. The states and probes are described in docs/OPERATING.md, "Outages: the sink unavailable".
///
/// A 429 is an answer: back-pressure from a destination that is up, whose waits the Braze rate policy already
/// imposes; an outage's probe backoff on top would only add delay.
public struct SinkAvailability: Sendable {
    /// The thresholds and waits.
    public struct Policy: Sendable, Hashable {
        /// Transient failures in a row after which the sink is unavailable. 3: a lone 5xx is retried at once at
        /// no cost, while an outage stops the pass after a handful of requests, not the whole backlog.
        public var failuresBeforeUnavailable: Int
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
        /// The destination answered something (even a refusal, a 429 or a 401).
        public var answered: Bool
        /// It failed for the destination's sake, with this reason (after the answers, when both).
        public var failure: String?
        /// The sink declared itself down (`SinkHalt.Kind.unavailable`): unavailable at once.
        public var declaredDown: Bool
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
        /// Since when (UTC Unix milliseconds) the state holds.
        public var sinceMilliseconds: Int64
        /// The last transient failure (or failed probe).
        public var lastError: String?
        /// When the next probe may go (UTC Unix milliseconds); `nil` while available.
        public var nextProbeAtMilliseconds: Int64?
        /// Probes sent during this outage (0 while available).
        public var probes: Int
        /// Probes sent since the monitor was created (`/metrics`).
        public var probesTotal: Int
        /// Transient failures in a row (reset by any answer).
        public var failuresInARow: Int
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

    /// A launch: the next probe goes now, or `probeSpacing` after the last one. Nothing while available.
    public mutating func requestProbe(at now: Moment) {
        guard state == .unavailable else { return }
        var at = now.monotonic
        if let lastProbeStart { at = max(at, lastProbeStart + policy.probeSpacing) }
        if let scheduled = nextProbe, scheduled.monotonic <= at { return }
        nextProbe = (at, now.wallMilliseconds + (at - now.monotonic).wholeMilliseconds)
    }

    /// A pass starts: no probe can be in flight (one pass at a time). A flag left set by a pass that failed on a
    /// queue error would close the sink for good.
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

    /// A probe was due but nothing was claimable: with nothing at stake the sink is taken as available, and the
    /// next delivery tells. Else status would say "unavailable" as long as the queue stays empty, and passes wake
    /// for probes with nothing to send.
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
            // A request in flight when the sink went down says nothing new; a failed probe backs the next off.
            if signal.probe {
                failedProbes += 1
                schedule(after: backoff(afterFailedProbes: failedProbes), at: now)
            }
            return transition
        }
    }

    /// The wait after `failed` failed probes, before jitter: `firstProbeDelay` doubled per failed probe, capped at
    /// `longestProbeDelay` (5, 10, 20, 40, 60, 60 s … by default). The outer `min` keeps that cap when a caller set
    /// the policy's public fields after its init (longest below first), which `Backoff`'s own clamp would raise.
    public func backoff(afterFailedProbes failed: Int) -> Duration {
        let longest = policy.longestProbeDelay.wholeMilliseconds
        let probes = Backoff(baseMilliseconds: policy.firstProbeDelay.wholeMilliseconds, capMilliseconds: longest)
        return .milliseconds(min(longest, probes.ceiling(attempt: min(failed, 40) + 1)))
    }

    private mutating func schedule(after wait: Duration, at now: Moment) {
        let base = wait.wholeMilliseconds
        let most = Int64(Double(base) * policy.jitterShare)
        let jitter = most > 0 ? Int64(random.next() % UInt64(most + 1)) : 0
        var at = now.monotonic + .milliseconds(base + jitter)
        if let lastProbeStart { at = max(at, lastProbeStart + policy.probeSpacing) }
        nextProbe = (at, now.wallMilliseconds + (at - now.monotonic).wholeMilliseconds)
    }
}
