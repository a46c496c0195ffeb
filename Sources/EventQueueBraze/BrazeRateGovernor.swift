import Logging

/// Steers how fast one `BrazeSink` opens requests, shared by all its deliveries in flight.
///
/// Three brakes, each from a different source:
/// - `--max-requests-per-second R` (this host's share of the workspace's limit, which several hosts share): no
///   request starts while R others are in flight or were answered within the last second. Counting from the
///   answer rather than the start is what makes it hold at Braze's end too: a request reaches Braze somewhere
///   between its start and its answer (a new connection can delay it by a lot), so two requests R apart in
///   this order reach Braze at least 1 s apart, and no 1 s window there ever holds more than R.
/// - Braze's `X-RateLimit-Remaining`/`X-RateLimit-Reset`: when a response says none remain, no request starts
///   until the reset.
/// - 429: every request waits (a pause), and the send window (how many requests may be in flight) halves; it
///   grows back by one per accepted answer. The pause has a floor of 1 s with jitter and doubles while 429s keep
///   coming (up to a minute), whatever `Retry-After` or the reset say: a `Retry-After: 0`, or a reset already
///   past because our clock runs ahead of Braze's, would otherwise make a hot loop. A streak is logged once.
actor BrazeRateGovernor {
    /// What one answer says about the rate.
    enum Feedback: Sendable {
        /// Not rate limited; `remaining`/`resetAtMilliseconds` from the headers when present.
        case answered(remaining: Int?, resetAtMilliseconds: Int64?)
        /// A 429, with the wait Braze hinted (`Retry-After`, else the reset), if any.
        case rateLimited(hintMilliseconds: Int64?)
        /// No answer (a timeout, a connection error): says nothing about the rate.
        case noAnswer
    }

    /// Counters for `/metrics`.
    struct Snapshot: Sendable, Hashable {
        var inFlight = 0
        var window = 0
        /// Requests that had to wait for a brake before starting.
        var rateLimitWaits = 0
        var rateLimitWaitMilliseconds: Int64 = 0
    }

    private let maxWindow: Int
    private let maxRequestsPerSecond: Int?
    private let logger: Logger
    private let now: @Sendable () -> ContinuousClock.Instant
    private let wallMilliseconds: @Sendable () -> Int64

    private var window: Int
    private var inFlight = 0
    /// When the requests answered within the last second were answered (for `maxRequestsPerSecond`), oldest
    /// first.
    private var recentAnswers: [ContinuousClock.Instant] = []
    private var pausedUntil: ContinuousClock.Instant?
    private var streak = 0
    private var waits = 0
    private var waitedMilliseconds: Int64 = 0

    /// The shortest pause after a 429, and the longest.
    static let pauseFloorMilliseconds: Int64 = 1_000
    static let pauseCapMilliseconds: Int64 = 60_000
    /// The longest a `Reset` in the headers may stop us when nothing was refused yet.
    static let resetCapMilliseconds: Int64 = 60_000

    init(
        maxWindow: Int, maxRequestsPerSecond: Int?, logger: Logger,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        wallMilliseconds: @escaping @Sendable () -> Int64
    ) {
        self.maxWindow = max(1, maxWindow)
        self.maxRequestsPerSecond = maxRequestsPerSecond.map { max(1, $0) }
        self.logger = logger
        self.now = now
        self.wallMilliseconds = wallMilliseconds
        window = self.maxWindow
    }

    var snapshot: Snapshot {
        Snapshot(
            inFlight: inFlight, window: window, rateLimitWaits: waits, rateLimitWaitMilliseconds: waitedMilliseconds)
    }

    /// Waits until a request may start, then counts it in flight. Returns early (without counting) only when
    /// the task is cancelled; the caller then sends nothing.
    func acquire() async -> Bool {
        var waited = false
        let started = now()
        while !Task.isCancelled {
            let current = now()
            guard let until = blockedUntil(at: current) else {
                inFlight += 1
                if waited {
                    waits += 1
                    waitedMilliseconds += Self.milliseconds(current - started)
                }
                return true
            }
            waited = true
            // The actor is free while this task sleeps: other deliveries keep answering and releasing.
            try? await Task.sleep(until: until, clock: .continuous)
        }
        return false
    }

    /// When the next request may start, `nil` for now.
    private func blockedUntil(at current: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        if let pausedUntil, pausedUntil > current { return pausedUntil }
        pausedUntil = nil
        if let limit = maxRequestsPerSecond {
            let cutoff = current - .seconds(1)
            recentAnswers.removeAll { $0 <= cutoff }
            if inFlight + recentAnswers.count >= limit {
                // The oldest answer leaves the window first; with none, an answer must come in first.
                return recentAnswers.first.map { $0 + .seconds(1) } ?? current + .milliseconds(5)
            }
        }
        // A full window frees up when an answer comes in: look again shortly.
        if inFlight >= window { return current + .milliseconds(5) }
        return nil
    }

    /// Counts a request out of flight and learns from its answer. For a 429, returns how long its records
    /// should wait before they are tried again (the pause).
    @discardableResult
    func release(_ feedback: Feedback) -> Int64? {
        inFlight = max(0, inFlight - 1)
        if maxRequestsPerSecond != nil { recentAnswers.append(now()) }
        switch feedback {
        case .answered(let remaining, let resetAt):
            if streak > 0 {
                logger.notice("braze rate limit lifted", metadata: ["rate_limited_requests": "\(streak)"])
                streak = 0
            }
            window = min(maxWindow, window + 1)
            if remaining == 0, let resetAt {
                let wait = min(max(0, resetAt - wallMilliseconds()), Self.resetCapMilliseconds)
                if wait > 0 { pause(milliseconds: wait) }
            }
            return nil
        case .rateLimited(let hint):
            streak += 1
            window = max(1, window / 2)
            let exponent = min(streak - 1, 6)
            let floor = min(Self.pauseFloorMilliseconds << exponent, Self.pauseCapMilliseconds)
            // Jitter: up to half the floor again, so hosts sharing a workspace do not come back in step.
            let jittered = floor + Int64.random(in: 0...(floor / 2))
            let wait = min(max(jittered, hint ?? 0), Self.pauseCapMilliseconds)
            pause(milliseconds: wait)
            if streak == 1 {
                logger.warning(
                    "braze rate limit: pausing requests",
                    metadata: [
                        "pause_ms": "\(wait)", "retry_hint_ms": "\(hint.map { "\($0)" } ?? "none")",
                        "window": "\(window)",
                    ])
            }
            return wait
        case .noAnswer:
            return nil
        }
    }

    private func pause(milliseconds: Int64) {
        let until = now() + .milliseconds(milliseconds)
        if pausedUntil.map({ $0 < until }) ?? true { pausedUntil = until }
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }
}
