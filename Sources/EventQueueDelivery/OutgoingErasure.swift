import EventQueue

/// A claimed erasure, read and checked, ready for a sink's `erase`: delete `user` at the destination. Handed over
/// only once no delivery under a lease in `waitsFor` is in flight (`InFlightLeases`).
public struct OutgoingErasure: Sendable, Hashable {
    /// The erasure's record id: outcomes are reported under it, as for a record.
    public var id: Int64
    public var user: UserIdentity
    /// Failed attempts before this one.
    public var attempts: Int
    /// When `forget` queued it (UTC Unix milliseconds).
    public var createdAtMilliseconds: Int64
    /// Lease tokens of the records of the user that were in flight when `forget` ran.
    public var waitsFor: [String]
    /// The latest expiry of those leases then (UTC Unix milliseconds), when the forget recorded it.
    public var leasedUntilMilliseconds: Int64?

    /// An erasure of `user` under record id `id` (tests and sinks build them too).
    public init(
        id: Int64, user: UserIdentity, attempts: Int = 0, createdAtMilliseconds: Int64 = 0, waitsFor: [String] = []
    ) {
        self.id = id
        self.user = user
        self.attempts = attempts
        self.createdAtMilliseconds = createdAtMilliseconds
        self.waitsFor = waitsFor
    }

    /// The identifier type that names the user at `POST /users/delete` (one type per request).
    public var identifierType: Erasure.IdentifierType { Erasure.IdentifierType(user) }

    /// Reads a claimed erasure row: one valid identifier of the column's type whose grant verifies under `key`
    /// (`ErasureKey`), else it is dead-lettered with the reason (a planted one's begins `Erasure.unauthorized`).
    static func prepare(
        _ claimed: ClaimedRecord, erasure: Erasure, key: Result<ErasureKey, ErasureProblem>?
    ) -> Result<OutgoingRecord, ErasureProblem> {
        switch erasure.user(payload: claimed.payload) {
        case .failure(let problem): return .failure(problem)
        case .success(let user):
            switch key {
            case .success(let key)?:
                guard key.verifies(erasure.grant, id: claimed.id, type: erasure.type, userKey: claimed.userKey) else {
                    return .failure(
                        ErasureProblem(
                            description: "\(Erasure.unauthorized): its grant does not verify under \(key.path), so "
                                + "no one who may delete users at Braze (root, the daemon's user, "
                                + "\(ErasureKey.adminGroup)) queued it"))
                }
            case .failure(let problem)?:
                return .failure(ErasureProblem(description: "cannot check its grant: \(problem); not sent"))
            case nil:
                return .failure(ErasureProblem(description: "cannot check its grant: this consumer has no erasure key"))
            }
            var record = OutgoingRecord(
                id: claimed.id, kind: claimed.kind, object: JSONObject(members: [user.brazeMember]),
                userKey: claimed.userKey, createdAtMilliseconds: claimed.createdAtMilliseconds,
                attempts: claimed.attempts)
            record.erasure = OutgoingErasure(
                id: claimed.id, user: user, attempts: claimed.attempts,
                createdAtMilliseconds: claimed.createdAtMilliseconds, waitsFor: erasure.after)
            record.erasure?.leasedUntilMilliseconds = erasure.leasedUntilMilliseconds
            return .success(record)
        }
    }
}
