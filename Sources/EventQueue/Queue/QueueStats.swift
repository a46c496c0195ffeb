/// A snapshot of a queue, as `queuectl status` prints it.
public struct QueueStats: Sendable, Hashable {
    /// Records waiting for delivery (due now or at their retry time).
    public var pending: Int
    /// Records claimed by a consumer under a lease (in flight).
    public var leased: Int
    /// Dead letters: records that will not be delivered unless an operator retries them.
    public var dead: Int
    /// Seconds since the oldest pending record was enqueued; `nil` when nothing is pending.
    public var oldestPendingAgeSeconds: Double?
    /// The earliest time (Unix ms) a record not claimable now becomes claimable: the daemon's next pass.
    public var nextRetryAtMilliseconds: Int64?
    /// The size of the queue file.
    public var databaseBytes: Int64
    /// The size of its write-ahead log (`-wal`), not yet folded back into the file.
    public var walBytes: Int64
    /// The file's schema version (`PRAGMA user_version`).
    public var schemaVersion: Int
    /// Idempotency keys of delivered records still remembered; only with `stats(includingKeys:)` (reads both tables).
    public var rememberedKeys: Int = 0
    /// An estimate of their size in the file (`RememberedKeys.estimatedBytes`).
    public var rememberedKeyBytes: Int64 = 0
    /// Bytes of pages in use (free pages not counted): what the size limit bounds (`QueueLimits`).
    public var queueBytes: Int64 = 0
    /// The limits the daemon recorded in the file, or `nil` when none are.
    public var limits: QueueLimits?
    /// When they were recorded (Unix ms).
    public var limitsSetAtMilliseconds: Int64?
    /// What the queue gave up, by cause, since the file was created.
    public var drops = QueueDrops()
    /// Erasures not sent yet. Filled in only when asked for (`stats(includingErasures:)`): it reads the whole table.
    public var erasuresPending: Int = 0
    /// Erasures Braze refused for good (or that ran out of attempts): dead letters until `dead retry` or `purge`.
    public var erasuresDead: Int = 0
    /// Of the dead erasures, those whose grant did not verify (`Erasure.unauthorized`), never sent.
    public var erasuresUnauthorized: Int = 0
    /// When the last `forget` whose scrub is still owed ran (Unix ms; `ScrubReport.vacuumed`), `nil` when none is.
    public var scrubOwedSinceMilliseconds: Int64? = nil
    /// How many users' later records wait behind a dead barrier (filled in with the erasures).
    public var heldUsers: Int = 0
    /// The first few of those users' filing keys, in order, so that `status` can name whom to look at.
    public var heldUserKeys: [String] = []
}
