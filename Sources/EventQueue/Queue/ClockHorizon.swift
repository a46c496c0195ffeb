/// How far ahead of "now" a time stored in the queue file (due times, lease and drain-lock expiries: wall-clock
/// ms, so that every process can compare them) may legitimately lie. The library never writes one further ahead
/// than `longestWaitMilliseconds`, so a later one comes from a clock ahead of the reader's (stepped back here, or
/// fast elsewhere): it counts as passed, instead of parking the queue until the clock catches up.
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
