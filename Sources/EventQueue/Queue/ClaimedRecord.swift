/// A record handed to a consumer under a lease.
public struct ClaimedRecord: Sendable, Hashable {
    public let id: Int64
    public let kind: RecordKind
    /// The stored Braze object as JSON text, exactly as the writer enqueued it.
    public let payload: String
    /// The user the record belongs to (see `UserIdentity.orderingKey`).
    public let userKey: String
    public let createdAtMilliseconds: Int64
    /// Failed delivery attempts so far.
    public let attempts: Int

    public init(
        id: Int64, kind: RecordKind, payload: String, userKey: String, createdAtMilliseconds: Int64, attempts: Int
    ) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.userKey = userKey
        self.createdAtMilliseconds = createdAtMilliseconds
        self.attempts = attempts
    }
}

/// Proof of a claim. Acks, nacks and renewals name the lease, so a consumer whose lease expired (and whose
/// records were claimed again by someone else, or by itself in a later claim) cannot ack what it no longer owns.
public struct Lease: Sendable, Hashable {
    /// Unique per claim: the consumer's id and a claim sequence number.
    public let token: String
    public internal(set) var expiresAtMilliseconds: Int64
}

/// The result of one claim: the records, oldest first, and the lease that covers them.
public struct Claim: Sendable {
    public let lease: Lease
    public let records: [ClaimedRecord]
}

/// What a nack did: records that will be retried, and records that ran out of attempts and are now dead.
public struct NackResult: Sendable, Hashable {
    public var retried: [Int64] = []
    public var dead: [Int64] = []
}
