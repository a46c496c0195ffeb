extension QueueAdmin {
    /// How long delivered idempotency keys are remembered.
    public static let deliveredKeyRetentionMilliseconds: Int64 = 7 * 24 * 3600 * 1000

    /// Returns space after a drain: forgets expired idempotency keys, frees the pages of deleted records (a scrubbing
    /// `VACUUM` when `QueueScrub` allows, else `incremental_vacuum`), and truncates the WAL. Without it a queue only
    /// grows: deleted rows never shrink a file, and long-lived readers starve checkpoints.
    @discardableResult
    public func checkpointAndVacuum(now: Int64 = WallClock.nowMilliseconds()) throws(QueueError) -> MaintenanceResult {
        let connection = file.connection
        let walBefore = Self.fileSize(path + "-wal")
        let databaseBefore = Self.fileSize(path)
        let pruned = try connection.write("forgetting old idempotency keys") { () throws(QueueError) in
            try RememberedKeys.prune(connection, before: now - Self.deliveredKeyRetentionMilliseconds, now: now)
        }
        file.unscrubbedDeletions += pruned.count
        let vacuumed = try QueueScrub.vacuumAfterPass(file)
        if !vacuumed { try vacuumInSteps() }
        let complete = try connection.truncateWAL()
        if vacuumed && complete { QueueScrub.clearMark(file) }
        return MaintenanceResult(
            walBytesBefore: walBefore, walBytesAfter: Self.fileSize(path + "-wal"),
            databaseBytesBefore: databaseBefore, databaseBytesAfter: Self.fileSize(path),
            checkpointComplete: complete)
    }

    /// Pages returned to the filesystem per vacuum step (4 MiB at SQLite's 4 KiB pages).
    static let vacuumStepPages = 1024

    /// `incremental_vacuum` in steps, each its own short write transaction followed by a passive checkpoint: in one
    /// transaction the WAL would hold every page of a drained backlog while writers wait.
    func vacuumInSteps() throws(QueueError) {
        let connection = file.connection
        let operation = "vacuuming freed pages"
        var free = try connection.scalarInt("PRAGMA freelist_count", operation: operation)
        while free > 0 {
            // Not durable: a vacuum step lost to a power cut leaves the pages free, for the next upkeep.
            try connection.write(operation, durable: false) { () throws(QueueError) in
                try connection.execute("PRAGMA incremental_vacuum(\(Self.vacuumStepPages))", operation: operation)
            }
            _ = try connection.scalarInt("PRAGMA wal_checkpoint(PASSIVE)", operation: "checkpointing the WAL")
            let left = try connection.scalarInt("PRAGMA freelist_count", operation: operation)
            if left >= free { break }  // writers are reusing the pages as fast as they are freed
            free = left
        }
    }

    /// Truncates the WAL when it has grown past `thresholdBytes`, between batches of a long pass: automatic
    /// checkpoints restart the WAL only when no reader holds an older snapshot. Returns true when it truncated.
    @discardableResult
    public func truncateWALIfLarger(than thresholdBytes: Int64) throws(QueueError) -> Bool {
        guard Self.fileSize(path + "-wal") > thresholdBytes else { return false }
        return try file.connection.truncateWAL()
    }
}
