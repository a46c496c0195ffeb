/// A sink's answer for one batch: an outcome per record id, and optionally a request to stop the pass.
public struct DeliveryReport: Sendable, Hashable {
    /// Records without an outcome are retried with the reason "the sink reported no outcome".
    public var outcomes: [Int64: DeliveryOutcome]
    public var halt: SinkHalt?

    public init(outcomes: [Int64: DeliveryOutcome] = [:], halt: SinkHalt? = nil) {
        self.outcomes = outcomes
        self.halt = halt
    }

    /// The same outcome for every record of `batch`.
    public init(_ outcome: DeliveryOutcome, for batch: [OutgoingRecord], halt: SinkHalt? = nil) {
        var outcomes: [Int64: DeliveryOutcome] = [:]
        outcomes.reserveCapacity(batch.count)
        for record in batch { outcomes[record.id] = outcome }
        self.init(outcomes: outcomes, halt: halt)
    }
}
