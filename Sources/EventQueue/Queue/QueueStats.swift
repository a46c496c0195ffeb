/// A snapshot of a queue, as `queuectl status` prints it.
public struct QueueStats: Sendable, Hashable {
    public var pending: Int
    public var leased: Int
    public var dead: Int
    /// Seconds since the oldest pending record was enqueued; `nil` when nothing is pending.
    public var oldestPendingAgeSeconds: Double?
    /// The earliest time a record not claimable now becomes claimable (Unix ms): a retry coming due, or the
    /// lease of a crashed consumer expiring. A daemon schedules its next pass for then.
    public var nextRetryAtMilliseconds: Int64?
    public var databaseBytes: Int64
    public var walBytes: Int64
    public var schemaVersion: Int
}
