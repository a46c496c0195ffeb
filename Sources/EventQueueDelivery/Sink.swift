import EventQueue

/// What became of one record handed to a sink.
public enum DeliveryOutcome: Sendable, Hashable {
    /// Accepted by the destination: ack (delete) it.
    case delivered
    /// Not accepted this time; try again later. `after` (milliseconds) is the sink's own hint (a
    /// `Retry-After`), else the drain loop backs off exponentially with jitter. A rate limit is not the
    /// record's fault, so it passes `countsAsAttempt: false` and never uses up the record's attempts.
    case retry(reason: String, afterMilliseconds: Int64? = nil, countsAsAttempt: Bool = true)
    /// Refused for good (malformed for the destination): dead-letter it with the reason, now.
    case rejected(reason: String)
}

/// Why a sink wants the drain pass to stop.
public struct SinkHalt: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The sink cannot work until someone fixes its configuration (a bad API key, a wrong URL). Records
        /// are kept untouched, attempts are not counted, and the next launch tries again.
        case configuration
        /// The destination is down; records keep their retry schedule and the pass ends early.
        case unavailable
    }

    public var kind: Kind
    public var reason: String

    public init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(kind.rawValue): \(reason)" }
}

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
    public func close() async {}
    public func reopen() {}
    public var maxConcurrentDeliveries: Int { 1 }
    public var recordsPerRequest: Int? { nil }
}
