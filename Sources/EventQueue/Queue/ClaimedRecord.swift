/// A record handed to a consumer under a lease.
public struct ClaimedRecord: Sendable, Hashable {
    /// The record's id: unique in the file, increasing with enqueue order.
    public let id: Int64
    /// Which Braze array the record goes into.
    public let kind: RecordKind
    /// The stored Braze object as JSON text, exactly as the writer enqueued it.
    public let payload: String
    /// The user the record belongs to (see `UserIdentity.orderingKey`).
    public let userKey: String
    /// When it was enqueued (UTC Unix milliseconds).
    public let createdAtMilliseconds: Int64
    /// Failed delivery attempts so far.
    public let attempts: Int
    /// Set when the row is a user's erasure, not a record: it goes to the sink's `erase`, never `/users/track`.
    public let erasure: Erasure?

    /// A claimed record as the claim statement read it (tests and sinks build them too).
    public init(
        id: Int64, kind: RecordKind, payload: String, userKey: String, createdAtMilliseconds: Int64, attempts: Int,
        erasure: Erasure? = nil
    ) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.userKey = userKey
        self.createdAtMilliseconds = createdAtMilliseconds
        self.attempts = attempts
        self.erasure = erasure
    }
}

/// Proof of a claim: acks, nacks and renewals name the lease, so a consumer whose lease expired cannot ack what
/// it no longer owns.
public struct Lease: Sendable, Hashable {
    /// Unique per claim: the consumer's id and a claim sequence number.
    public let token: String
    /// When the lease lapses (UTC Unix milliseconds) unless renewed: the records are claimable again then.
    public internal(set) var expiresAtMilliseconds: Int64
}

/// The result of one claim: the records, oldest first, and the lease that covers them.
public struct Claim: Sendable {
    /// The lease every ack, nack and renewal of these records must name.
    public let lease: Lease
    /// The claimed records, oldest first.
    public let records: [ClaimedRecord]
}

/// What a nack did: records that will be retried, and records that ran out of attempts and are now dead.
public struct NackResult: Sendable, Hashable {
    /// Ids that are pending again, due at their retry time.
    public var retried: [Int64] = []
    /// Ids that used up their attempts and are dead letters now.
    public var dead: [Int64] = []
}
