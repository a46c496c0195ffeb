import CSQLite

/// What a maintenance run did.
public struct MaintenanceResult: Sendable, Hashable {
    public var walBytesBefore: Int64
    public var walBytesAfter: Int64
    public var databaseBytesBefore: Int64
    public var databaseBytesAfter: Int64
    /// False when a reader kept the checkpoint from finishing; it is retried at the next drain.
    public var checkpointComplete: Bool
}

extension QueueConsumer {
    /// How long delivered idempotency keys are remembered.
    public static let deliveredKeyRetentionMilliseconds: Int64 = 7 * 24 * 3600 * 1000

    /// How long the closing checkpoint waits for writers in progress (far below a writer's busy timeout).
    static let checkpointBusyTimeoutMilliseconds: Int32 = 100

    /// Returns space after a drain: forgets expired idempotency keys, frees the pages of deleted records
    /// (`incremental_vacuum`), and truncates the WAL (`wal_checkpoint(TRUNCATE)`). Long-lived readers starve
    /// checkpoints, and deleted rows never shrink a file by themselves; without this a queue only grows.
    @discardableResult
    public func checkpointAndVacuum(now: Int64 = WallClock.nowMilliseconds()) throws(QueueError) -> MaintenanceResult {
        let connection = file.connection
        let walBefore = Self.fileSize(path + "-wal")
        let databaseBefore = Self.fileSize(path)
        let prune = try connection.statement(
            "DELETE FROM delivered_keys WHERE delivered_at_ms < ?1", operation: "forgetting old idempotency keys")
        prune.bind(1, now - Self.deliveredKeyRetentionMilliseconds)
        try prune.run()
        try connection.execute("PRAGMA incremental_vacuum", operation: "vacuuming freed pages")
        let checkpoint = try connection.statement(
            "PRAGMA wal_checkpoint(TRUNCATE)", operation: "checkpointing the WAL")
        // A TRUNCATE checkpoint holds new writers back while it waits for the ones in progress. Waiting with the
        // full busy timeout could make a writer time out (SQLITE_BUSY) behind it, so it waits briefly and, when
        // writers keep the file busy, leaves the WAL to the next pass (writers' own checkpoints bound it).
        if let handle = connection.handle { sqlite3_busy_timeout(handle, Self.checkpointBusyTimeoutMilliseconds) }
        defer {
            if let handle = connection.handle {
                sqlite3_busy_timeout(handle, Int32(clamping: connection.busyTimeoutMilliseconds))
            }
        }
        var complete = false
        if try checkpoint.step() { complete = checkpoint.int64(0) == 0 }
        checkpoint.reset()
        return MaintenanceResult(
            walBytesBefore: walBefore, walBytesAfter: Self.fileSize(path + "-wal"),
            databaseBytesBefore: databaseBefore, databaseBytesAfter: Self.fileSize(path),
            checkpointComplete: complete)
    }
}
