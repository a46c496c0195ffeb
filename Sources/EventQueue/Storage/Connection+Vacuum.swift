import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// The scrub's two statements that cannot run inside the write door's transaction: `VACUUM` and the `TRUNCATE`
/// checkpoint that has to follow it (`QueueScrub`).
extension Connection {
    /// `VACUUM`, in this connection's turn in the writers' line (`QueueScrub`). Checks the schema first, as a write
    /// does (a planted index would run its expressions inside the rebuild). `inMemory`: the rebuilt copy is kept in
    /// memory, not in a temporary file. A `VACUUM` is all or nothing, so past `budgetNanoseconds` a progress handler
    /// interrupts it, SQLite rolls it back, and this returns false.
    func vacuum(operation: String, inMemory: Bool, budgetNanoseconds: UInt64) throws(QueueError) -> Bool {
        try read(operation) { () throws(QueueError) in }
        if !inMemory { try execute("PRAGMA temp_store = FILE", operation: operation) }
        defer {
            if !inMemory { try? execute("PRAGMA temp_store = MEMORY", operation: operation) }
        }
        gate.enter()
        let deadline = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        deadline.initialize(to: WallClock.monotonicNanoseconds() &+ budgetNanoseconds)
        sqlite3_progress_handler(
            handle, 1000,
            { context in
                guard let context else { return 0 }
                return WallClock.monotonicNanoseconds() > context.load(as: UInt64.self) ? 1 : 0
            }, deadline)
        defer {
            gate.leave()
            sqlite3_progress_handler(handle, 0, nil, nil)
            deadline.deallocate()
        }
        do {
            try execute("VACUUM", operation: operation)
            return true
        } catch {
            guard let handle, sqlite3_errcode(handle) == SQLITE_INTERRUPT else { throw error }
            return false
        }
    }

    /// How long one `TRUNCATE` checkpoint try, or the upkeep's `VACUUM`, waits for the lock (far below a writer's
    /// busy timeout: new writers wait behind it).
    static let checkpointTryMilliseconds = 100

    /// `wal_checkpoint(TRUNCATE)` until it succeeds or `deadlineNanoseconds` (monotonic; 0: one try) passes, each
    /// try waiting at most `checkpointTryMilliseconds` (it holds the write lock while it waits, so writers get the
    /// lock between tries), after a `PASSIVE` one that copies the frames without the lock. Returns true once the WAL
    /// is empty.
    func truncateWAL(
        deadlineNanoseconds: UInt64 = 0, operation: String = "checkpointing the WAL"
    ) throws(QueueError) -> Bool {
        _ = try scalarInt("PRAGMA wal_checkpoint(PASSIVE)", operation: operation)
        while true {
            let done = try withBusyTimeout(milliseconds: Self.checkpointTryMilliseconds) {
                () throws(QueueError) -> Bool in
                try firstRow("PRAGMA wal_checkpoint(TRUNCATE)", operation: operation) { $0.int64(0) == 0 } ?? false
            }
            if done { return true }
            guard WallClock.monotonicNanoseconds() < deadlineNanoseconds else { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 20_000_000)
            nanosleep(&pause, nil)
        }
    }
}
