import EventQueue

/// The daemon's limits from its flags, else its environment, else the system configuration file, else
/// the defaults: the order the queue's own path follows (`QueueEnvironment`), so an installation sets them once in
/// `/etc/eventqueue/eventqueue.conf`, which the unit also loads (`EnvironmentFile=`), and a daemon started by hand
/// on that installation reads the same file.
///
/// | flag | variable | default |
/// |---|---|---|
/// | `--max-queue-bytes N` | `QUEUED_MAX_QUEUE_BYTES` | 0: no limit beyond the free-space reserve |
/// | `--when-full refuse\|drop-oldest` | `QUEUED_WHEN_FULL` | refuse |
/// | `--max-age-seconds N` | `QUEUED_MAX_AGE_SECONDS` | 604800 (one week); 0 keeps records forever |
public enum LimitSettings {
    public static let maxQueueBytesVariable = "QUEUED_MAX_QUEUE_BYTES"
    public static let whenFullVariable = "QUEUED_WHEN_FULL"
    public static let maxAgeSecondsVariable = "QUEUED_MAX_AGE_SECONDS"

    /// The limits, each from the first of: the flag, the environment variable, the configuration file's line.
    /// A variable or line that does not parse, or is out of range, is a configuration error naming it.
    public static func resolve(
        maxQueueBytes: Int64?, whenFull: QueueLimits.WhenFull?, maxAgeSeconds: Int64?,
        configuration: SystemConfiguration? = SystemConfiguration.load()
    ) throws(ConfigurationError) -> QueueLimits {
        /// The flag, else the variable or line `name` read by `parse`.
        func value<T>(
            _ flag: T?, _ name: String, expected: String, _ parse: (String) -> T?
        ) throws(ConfigurationError) -> T? {
            if let flag { return flag }
            let text = QueueEnvironment.variable(name) ?? configuration?.values[name].flatMap { $0.isEmpty ? nil : $0 }
            return try ConfigurationError.parse(name, text, expected: expected, parse)
        }
        var limits = QueueLimits.daemonDefault
        let ages = OptionRange.maxAgeSeconds
        limits.maxQueueBytes =
            try value(maxQueueBytes, maxQueueBytesVariable, expected: expectedBytes) {
                Int64($0).flatMap { problem(maxQueueBytes: $0) == nil ? $0 : nil }
            } ?? limits.maxQueueBytes
        limits.whenFull =
            try value(
                whenFull, whenFullVariable, expected: "refuse or drop-oldest", QueueLimits.WhenFull.init(rawValue:))
            ?? limits.whenFull
        limits.maxAgeSeconds =
            try value(maxAgeSeconds, maxAgeSecondsVariable, expected: "seconds, 0 (forever) to \(ages.upperBound)") {
                Int64($0).flatMap(ages.ifContains)
            } ?? limits.maxAgeSeconds
        return limits
    }

    static let expectedBytes =
        "bytes, 0 (no limit) or \(QueueLimits.smallestMaxQueueBytes) to \(OptionRange.maxQueueBytes.upperBound)"

    /// The problem with a size limit (`--max-queue-bytes`), or `nil`: 0, or 1 MiB to 1 PiB.
    public static func problem(maxQueueBytes value: Int64) -> String? {
        guard value != 0, !OptionRange.maxQueueBytes.contains(value) else { return nil }
        return "--max-queue-bytes must be 0 (no limit) or \(QueueLimits.smallestMaxQueueBytes) to "
            + "\(OptionRange.maxQueueBytes.upperBound) (got \(value))"
    }
}
