extension QueueAdmin {
    /// What `pruneKeys` forgot.
    public struct KeyPruning: Sendable, Hashable {
        /// Keys forgotten (or, in a dry run, that would be).
        public var keys: Int
        /// Their estimated size (`RememberedKeys.rowOverheadBytes`).
        public var bytes: Int64
    }

    /// Forgets the idempotency keys of records delivered more than `olderThanMilliseconds` ago (`keys prune`): a
    /// writer that retries a record whose key was forgotten enqueues it again, so prune only keys none will retry.
    public func pruneKeys(
        olderThanMilliseconds: Int64, dryRun: Bool = false, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> KeyPruning {
        let connection = file.connection
        let cutoff = now - max(0, olderThanMilliseconds)
        let operation = "forgetting old idempotency keys"
        let prune = { () throws(QueueError) in
            try RememberedKeys.prune(connection, before: cutoff, now: now, dryRun: dryRun)
        }
        let (count, bytes) = try dryRun ? connection.read(operation, prune) : connection.write(operation, prune)
        return KeyPruning(keys: count, bytes: bytes)
    }
}
