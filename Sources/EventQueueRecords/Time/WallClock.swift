#if canImport(Glibc)
    import Glibc
#endif

/// Time sources: record times are wall-clock (they must survive a reboot); durations inside one process use the
/// monotonic clock, so a clock change cannot stretch them.
public enum WallClock {
    /// Now, as UTC Unix milliseconds.
    public static func nowMilliseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// A monotonic reading in nanoseconds, for measuring elapsed time.
    public static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
