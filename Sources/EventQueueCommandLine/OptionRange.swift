import EventQueue

/// The accepted ranges of every numeric option and environment variable of `queued` and `queuectl`, in one
/// place. Every value is checked against its range in `validate()`, before arithmetic that could trap uses it
/// (exit 64, naming the range). The ranges only exclude values that cannot mean anything or would overflow.
public enum OptionRange {
    public static let batchSize = 1...10_000
    /// Seconds. Leases are stored at most 15 minutes ahead (`ClockHorizon`); 901 to 86,400 are accepted and
    /// used as 900, with one notice on stderr.
    public static let leaseSeconds = 1...86_400
    public static let longestLeaseSeconds = 900
    public static let maxAttempts = 1...1_000_000
    public static let brazeMaxObjects = 1...1_000
    /// Requests (batches) in flight at once: a connection each.
    public static let maxInFlight = 1...1_024
    /// Braze's workspace limit is 1,000 requests per second (3,000 per 3 s).
    public static let maxRequestsPerSecond = 1...100_000
    /// Milliseconds (`--busy-timeout`, `EVENTQUEUE_BUSY_TIMEOUT_MS`): up to one hour.
    public static let busyTimeoutMilliseconds = 0...3_600_000
    /// Bytes (`EVENTQUEUE_MIN_FREE_BYTES`): up to 1 PiB.
    public static let minimumFreeBytes: ClosedRange<Int64> = 0...(1 << 50)
    /// Bytes (`queued --max-queue-bytes`, besides 0 for no limit): 1 MiB (an empty queue takes about 90 KB) to
    /// 1 PiB.
    public static let maxQueueBytes: ClosedRange<Int64> = QueueLimits.smallestMaxQueueBytes...(1 << 50)
    /// Seconds (`queued --max-age-seconds`): 0 (forever) to 100 years.
    public static let maxAgeSeconds: ClosedRange<Int64> = 0...3_153_600_000
    /// Seconds, fractions allowed.
    public static let shutdownTimeoutSeconds = 0.0...3_600.0
    public static let drainIntervalSeconds = 0.01...604_800.0

    /// `nil` when `value` is in `range`, else the message: `--NAME must be LOW to HIGH (got VALUE)`.
    public static func problem<T: Comparable>(_ name: String, _ value: T, _ range: ClosedRange<T>) -> String? {
        range.contains(value) ? nil : "\(name) must be \(range.lowerBound) to \(range.upperBound) (got \(value))"
    }

    /// The same for a floating-point value: NaN and infinities are out of every range.
    public static func problem(_ name: String, _ value: Double, _ range: ClosedRange<Double>) -> String? {
        value.isFinite && range.contains(value)
            ? nil : "\(name) must be \(range.lowerBound) to \(range.upperBound) seconds (got \(value))"
    }

    /// A lease in milliseconds, at most 900 s, whatever `seconds` is (never traps).
    public static func leaseMilliseconds(seconds: Int) -> Int64 {
        Int64(min(max(seconds, 1), longestLeaseSeconds)) * 1000
    }
}
