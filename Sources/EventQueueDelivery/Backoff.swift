import EventQueue

/// Exponential backoff with full jitter: a retry waits a random time between 0 and
/// `min(cap, base * 2^(attempt-1))`, so many failing records (or many devices) do not retry in lock-step.
///
/// The backoff reads no clock itself: `dueTime` counts from the `now` of the drain loop's injected `DrainClock`,
/// so a test that advances that clock by `ceiling(attempt:)` finds the record due, without sleeping.
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

    public func delay(attempt: Int) -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &generator)
    }

    /// When retry number `attempt` comes due, in wall-clock milliseconds counted from `now` (the drain clock's):
    /// the sink's hint if it gave one (a `Retry-After`), else a jittered backoff. A hint is outside input, so the
    /// wait is kept between 1 ms and the clock horizon (15 minutes): no hint can overflow the arithmetic or park a
    /// record for good, and a longer `Retry-After` is simply asked again.
    public func dueTime(
        attempt: Int, hint: Int64?, now: Int64, using generator: inout some RandomNumberGenerator
    ) -> Int64 {
        let wait = min(max(1, hint ?? delay(attempt: attempt, using: &generator)), Self.longestWaitMilliseconds)
        return now &+ wait
    }

    public func dueTime(attempt: Int, hint: Int64?, now: Int64) -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return dueTime(attempt: attempt, hint: hint, now: now, using: &generator)
    }

    /// The longest a record is ever parked by one retry: the clock horizon, because a due time further ahead
    /// would read as a clock that went back.
    public static let longestWaitMilliseconds: Int64 = ClockHorizon.longestWaitMilliseconds
}
