/// What `forget` removed from the queue file, and what it queued for Braze (`QueueWriter.forget`,
/// `QueueAdmin.forget`, `queuectl forget`).
public struct ForgetReport: Sendable, Hashable {
    /// The user forgotten.
    public var user: UserIdentity
    /// Records of the user that were waiting (due now or at a retry time), removed.
    public var pending: Int = 0
    /// Records of the user that were in flight under a lease, removed: their late answer changes nothing (an ack
    /// or a retry finds no row), so they are not delivered again, and not retried if their request fails.
    public var leased: Int = 0
    /// Dead letters of the user, removed.
    public var dead: Int = 0
    /// Idempotency keys of the user's delivered records that the file still remembered, forgotten.
    public var rememberedKeys: Int = 0
    /// Earlier erasures of the user still in the queue (pending, in flight or dead): never removed, since each is
    /// a deletion Braze has not confirmed yet.
    public var erasuresKept: Int = 0
    /// The erasure queued for Braze's `POST /users/delete` (with `brazeDelete`), its record id; `nil` without.
    public var erasureID: Int64?
    /// Lease tokens of the records that were in flight: the erasure is sent only once no delivery under one of
    /// them is in flight any more.
    public var waitsFor: [String] = []
    /// What became of the removed records' bytes.
    public var scrub = ScrubReport(vacuumed: false, walTruncated: false, databaseBytes: 0, nanoseconds: 0)

    /// An empty report for `user` (nothing removed yet).
    public init(user: UserIdentity) {
        self.user = user
    }

    /// Every record of the user removed: pending, in flight and dead.
    public var removed: Int { pending + leased + dead }
}
