/// What became of one record handed to a sink.
public enum DeliveryOutcome: Sendable, Hashable {
    /// Accepted by the destination: ack (delete) it.
    case delivered
    /// Not accepted this time; try again later. `cause` says whose failure it was, and so what the retry costs
    /// (`RetryCause`: only a failure of the record itself uses up an attempt). `after` (milliseconds) is the
    /// sink's own hint (a `Retry-After`).
    case retry(reason: String, afterMilliseconds: Int64? = nil, cause: RetryCause)
    /// Refused for good (malformed for the destination): dead-letter it with the reason, now.
    case rejected(reason: String)
}

/// Why a record is to be retried: the one classification of sink failures, which decides what a retry costs the
/// record and what it says about the sink (`Settlement` applies it; `SinkAvailability` listens to it). Which
/// Braze answer is which: the table of `BrazeBatchDelivery`.
///
/// No attempt for `destination`: such a failure says nothing about the record, and counting it would turn a few
/// minutes' outage into dead letters that, retried later, go out after their user's newer records.
public enum RetryCause: String, Sendable, Hashable {
    /// The record itself failed: counts an attempt; the record backs off on its own.
    case record
    /// The destination failed (a 5xx, a timeout, a full disk) and said nothing about the record: no attempt, due
    /// at once; the sink's availability decides when anything is sent.
    case destination
    /// Back-pressure (a rate limit): no attempt; the destination is up and asked for time.
    case backPressure = "back_pressure"
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

    /// Adds the outcomes of a later call on the same batch (earlier outcomes win) and takes its halt.
    package mutating func append(_ later: DeliveryReport) {
        outcomes.merge(later.outcomes) { first, _ in first }
        halt = later.halt
    }

    /// The same outcome for every record of `batch`.
    public init(_ outcome: DeliveryOutcome, for batch: [OutgoingRecord], halt: SinkHalt? = nil) {
        var outcomes: [Int64: DeliveryOutcome] = [:]
        outcomes.reserveCapacity(batch.count)
        for record in batch { outcomes[record.id] = outcome }
        self.init(outcomes: outcomes, halt: halt)
    }
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
