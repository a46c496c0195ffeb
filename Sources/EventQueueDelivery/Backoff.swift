import EventQueue

/// Exponential backoff with full jitter: a retry waits a random time between 0 and
/// `min(cap, base * 2^(attempt-1))`, so many failing records (or many devices) do not retry in lock-step.
///
/// It reads no clock: `dueTime` counts from the drain loop's injected `now`.
public struct Backoff: Sendable, Hashable {
    public var baseMilliseconds: Int64
    public var capMilliseconds: Int64

    public init(baseMilliseconds: Int64 = 1_000, capMilliseconds: Int64 = 300_000) {
        self.baseMilliseconds = max(1, baseMilliseconds)
        self.capMilliseconds = max(self.baseMilliseconds, capMilliseconds)
    }

    /// The upper bound of the wait before retry number `attempt` (1 = the first retry).
    public func ceiling(attempt: Int) -> Int64 {
        let exponent = min(max(attempt - 1, 0), 40)
        let (scaled, overflow) = baseMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        return overflow ? capMilliseconds : min(capMilliseconds, scaled)
    }

    /// A jittered wait in milliseconds, at least 1.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Int64 {
        Int64.random(in: 1...ceiling(attempt: attempt), using: &generator)
    }

    /// A jittered wait in milliseconds, from the system's generator.
    @available(*, deprecated, message: "use delay(attempt:using:); kept for 1.3.0's callers, goes in 2.0")
    public func delay(attempt: Int) -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &generator)
    }

    /// The longest wait a retry is given.
    @available(*, deprecated, renamed: "ClockHorizon.longestWaitMilliseconds")
    public static let longestWaitMilliseconds = ClockHorizon.longestWaitMilliseconds

    /// When retry number `attempt` comes due, counted from `now`: the sink's hint (a `Retry-After`), else a
    /// jittered backoff; kept between 1 ms and the clock horizon, since a hint is outside input.
    public func dueTime(
        attempt: Int, hint: Int64?, now: Int64, using generator: inout some RandomNumberGenerator
    ) -> Int64 {
        now &+ ClockHorizon.clamp(hint ?? delay(attempt: attempt, using: &generator))
    }

    public func dueTime(attempt: Int, hint: Int64?, now: Int64) -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return dueTime(attempt: attempt, hint: hint, now: now, using: &generator)
    }
}
