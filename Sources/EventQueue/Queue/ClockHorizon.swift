/// How far ahead of "now" a time stored in the queue file may legitimately lie.
///
/// Due times (`next_attempt_at_ms`), lease expiries and the drain lock's expiry are wall-clock milliseconds in
/// the shared file, because every process that opens the file must be able to compare them. The library never
/// writes one further ahead than `longestWaitMilliseconds` (backoffs, retry hints and leases are capped to it),
/// so a stored time beyond `now + longestWaitMilliseconds` can only come from a clock that was ahead of the
/// reader's: this host's clock was stepped back, or another writer's clock runs fast. Such a time is treated as
/// already passed (the record is due, the lease or lock expired) instead of parking the queue until the clock
/// catches up, which after a step back of an hour would be an hour.
public enum ClockHorizon {
    /// 15 minutes: above the 5-minute backoff cap and typical leases, well below a clock step of an hour.
    public static let longestWaitMilliseconds: Int64 = 15 * 60 * 1000

    /// `milliseconds` clamped to the horizon (and to at least 1), for leases and retry waits.
    public static func clamp(_ milliseconds: Int64) -> Int64 {
        min(max(1, milliseconds), longestWaitMilliseconds)
    }

    /// The latest stored time still believable at `now`: anything later was written by a clock ahead of ours.
    public static func latestPlausible(after now: Int64) -> Int64 {
        now.addingReportingOverflow(longestWaitMilliseconds).overflow ? Int64.max : now + longestWaitMilliseconds
    }
}
