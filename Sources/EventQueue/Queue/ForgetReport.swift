/// What `QueueWriter.forget` removed from the queue file and queued for Braze, summed over the users forgotten.
public struct ForgetReport: Sendable, Hashable {
    /// The users forgotten.
    public var users: [UserIdentity]
    /// Records of the users that were waiting (due now or at a retry time), removed.
    public var pending: Int = 0
    /// Records of the users that were in flight under a lease, removed: never delivered again nor retried.
    public var leased: Int = 0
    /// Dead letters of the users, removed.
    public var dead: Int = 0
    /// Idempotency keys of the users' delivered records that the file still remembered, forgotten.
    public var rememberedKeys: Int = 0
    /// Earlier erasures of the users still in the queue: never removed (Braze has not confirmed them yet).
    public var erasuresKept: Int = 0
    /// The erasures queued (with `brazeDelete`), one record id per user in the order of `users`; empty without.
    public var erasureIDs: [Int64] = []
    /// Lease tokens of the records that were in flight (`Erasure.after`).
    public var waitsFor: [String] = []
    /// What became of the removed records' bytes.
    public var scrub = ScrubReport(vacuumed: false, walTruncated: false, databaseBytes: 0, nanoseconds: 0)

    /// An empty report for `users` (nothing removed yet).
    public init(users: [UserIdentity]) {
        self.users = users
    }

    /// Every record of the users removed: pending, in flight and dead.
    public var removed: Int { pending + leased + dead }
}
