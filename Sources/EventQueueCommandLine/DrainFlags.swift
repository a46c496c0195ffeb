import ArgumentParser
import EventQueueDelivery

/// The flags of a drain pass that `queuectl drain` and `queued` share, declared once (`@OptionGroup`) and checked
/// in `validate()`, before `run()`: a value out of its range (`OptionRange`) exits 64 with the range, never traps.
public struct DrainFlags: ParsableArguments, Sendable {
    @Option(name: .customLong("batch-size"), help: "Records per batch.")
    public var batchSize: Int = 100

    @Option(name: .customLong("lease-seconds"), help: "Lease length; renewed while a delivery is in flight.")
    public var leaseSeconds: Int = 60

    @Option(name: .customLong("max-attempts"), help: "Failed attempts before a record is dead-lettered.")
    public var maxAttempts: Int = 10

    @Option(
        name: .customLong("max-in-flight"),
        help: """
            Batches (requests) delivered at once, capped by the sink (jsonl and null take one at a time); 1 delivers \
            one after another. A user is never in two at once. queuectl drain: with --local.
            """)
    public var maxInFlight: Int = DrainOptions.defaultMaxInFlight

    public init() {}

    public func validate() throws {
        let problems = [
            OptionRange.problem("--batch-size", batchSize, OptionRange.batchSize),
            OptionRange.problem("--lease-seconds", leaseSeconds, OptionRange.leaseSeconds),
            OptionRange.problem("--max-attempts", maxAttempts, OptionRange.maxAttempts),
            OptionRange.problem("--max-in-flight", maxInFlight, OptionRange.maxInFlight),
        ]
        if let problem = problems.compactMap({ $0 }).first { throw ValidationError(problem) }
    }

    /// The options of the pass (a lease above 900 s is used as 900 s: see `leaseNote`).
    public var drainOptions: DrainOptions {
        DrainOptions(
            batchSize: batchSize, leaseMilliseconds: OptionRange.leaseMilliseconds(seconds: leaseSeconds),
            maxAttempts: maxAttempts, maxInFlight: maxInFlight)
    }

    /// The notice for a lease longer than a lease can last (accepted, and shortened), or `nil`.
    public func leaseNote(tool: String) -> String? {
        guard leaseSeconds > OptionRange.longestLeaseSeconds else { return nil }
        return "\(tool): note: --lease-seconds \(leaseSeconds) is above the \(OptionRange.longestLeaseSeconds) s "
            + "a lease can last; using \(OptionRange.longestLeaseSeconds)\n"
    }
}
