extension QueueConsumer {
    /// Runs `body` (one or more transactions) with `synchronous = NORMAL` when the queue is opened with FULL
    /// durability, then restores FULL.
    ///
    /// For state that may safely be lost on power failure: a claim or the drain lock. Losing a claim only makes
    /// its records claimable again, which is what an expired lease does anyway, and the drain lock is a lease
    /// too. In WAL mode the next FULL commit (the ack) fsyncs the WAL up to and including these frames, so a
    /// batch costs one fsync instead of three, and nothing an ack made durable can depend on a lost claim.
    func withRelaxedSync<T>(_ body: () throws(QueueError) -> T) throws(QueueError) -> T {
        guard file.options.durability == .full else { return try body() }
        let connection = file.connection
        try connection.setSynchronous(full: false, operation: "relaxing durability for a claim")
        let result: T
        do {
            result = try body()
        } catch {
            try? connection.setSynchronous(full: true, operation: "restoring durability")
            throw error
        }
        try connection.setSynchronous(full: true, operation: "restoring durability")
        return result
    }
}
