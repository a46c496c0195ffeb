/// Accepts everything and keeps nothing: for measuring the queue itself, and for discarding a backlog on purpose.
public struct NullSink: Sink {
    public init() {}

    public var name: String { "null" }

    public func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        DeliveryReport(.delivered, for: batch)
    }
}
