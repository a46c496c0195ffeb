/// Accepts everything and keeps nothing: for measuring the queue itself, and for discarding a backlog on purpose.
public struct NullSink: Sink {
    public init() {}

    public var name: String { "null" }

    public func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        DeliveryReport(.delivered, for: batch)
    }

    /// Accepts every erasure, as it accepts every record.
    public func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
        DeliveryReport(
            outcomes: Dictionary(erasures.map { ($0.id, .delivered) }, uniquingKeysWith: { first, _ in first }))
    }
}
