import EventQueue

/// A destination for records: a file, stdout, an HTTP API.
///
/// A sink reports an outcome per record, since destinations accept part of a batch (Braze's `errors`). It reports
/// `.delivered` only once the destination has the record durably: the record is deleted right after.
public protocol Sink: Sendable {
    /// A short name for logs and status ("jsonl:/var/log/events.jsonl").
    var name: String { get }
    /// Delivers records in the order given (oldest first; per-user order matters).
    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport
    /// Deletes users at the destination, an outcome per erasure id; called only once every request that carried a
    /// record of those users has been answered. The default refuses every erasure (dead letters that say so).
    func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport
    /// Releases what the sink holds (connections, files) at shutdown. The default does nothing.
    func close() async
    /// Opens its files again before the next batch: the daemon's SIGHUP after a log rotation. The default does
    /// nothing (a sink without files).
    func reopen()
    /// How many `deliver` calls the sink serves at once; the default, 1, is right for a file.
    var maxConcurrentDeliveries: Int { get }
    /// The records of one full request (Braze: 75), so the drain loop claims multiples of it; `nil` when any size
    /// does.
    var recordsPerRequest: Int? { get }
}

extension Sink {
    public func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
        var outcomes: [Int64: DeliveryOutcome] = [:]
        for erasure in erasures {
            outcomes[erasure.id] = .rejected(
                reason: "\(name) cannot delete users: the deletion of \(erasure.user.orderingKey) was not sent; "
                    + "deliver it with a sink that can (braze:URL), then `queuectl dead retry`")
        }
        return DeliveryReport(outcomes: outcomes)
    }

    public func close() async {}
    public func reopen() {}
    public var maxConcurrentDeliveries: Int { 1 }
    public var recordsPerRequest: Int? { nil }
}
