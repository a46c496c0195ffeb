import EventQueue

/// A destination for records: a file, stdout, an HTTP API.
///
/// A sink reports an outcome per record rather than success or failure per batch, because real destinations
/// accept part of a batch (Braze's `errors` array) and the queue must neither drop the refused records nor
/// resend the accepted ones. A sink must only report `.delivered` once the destination has the record durably
/// (fsync'd, or acknowledged by the API): the record is deleted right after.
public protocol Sink: Sendable {
    /// A short name for logs and status ("jsonl:/var/log/events.jsonl").
    var name: String { get }
    /// Delivers records in the order given (oldest first; per-user order matters).
    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport
    /// Deletes users at the destination (`forget` with a Braze delete), reporting an outcome per erasure id as
    /// `deliver` does per record. The drain loop calls it only once every request that carried a record of those
    /// users has been answered, and never together with a later record of theirs. The default refuses every
    /// erasure (dead letters that say so): a sink that drops them silently would leave users it was told to delete.
    func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport
    /// Releases what the sink holds (connections, files) at shutdown. The default does nothing.
    func close() async
    /// Opens its files again before the next batch: the daemon's SIGHUP after a log rotation. The default does
    /// nothing (a sink without files).
    func reopen()
    /// How many `deliver` calls the sink serves at once. The drain loop never runs more than this many batches
    /// at a time (and never more than `DrainOptions.maxInFlight`). The default, 1, is right for a file: its
    /// order is the order of the calls, and there is no round trip to hide.
    var maxConcurrentDeliveries: Int { get }
    /// The records one `deliver` call turns into one full request (Braze: 75, or the combined per-request
    /// limit); `nil` when any size does. With several deliveries in flight, the drain loop claims multiples of it
    /// so every request goes out full.
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
