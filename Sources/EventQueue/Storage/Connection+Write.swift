import CSQLite

/// The one door for writes (every statement of the library that changes the file runs in `write`), and its
/// read-only twin. `BEGIN IMMEDIATE` takes the write lock up front, so a transaction never fails half-way with
/// SQLITE_BUSY as a deferred read-then-write one can; the schema is checked again first (`schemaGuard`).
///
/// Why the sync comes after the commit: with `synchronous=NORMAL` a commit releases SQLite's lock without syncing;
/// syncing the WAL before `write` returns keeps `FULL`'s promise, yet no writer waits behind another's fsync. No
/// commit becomes durable ahead of an earlier one: WAL frames' checksums chain, and a sync covers every frame
/// written before it (docs/RELIABILITY.md).
extension Connection {
    /// Runs `body` as one write transaction, in this connection's turn; its errors are rethrown after the rollback.
    /// `durable: false` skips the sync for state whose loss to a power cut costs nothing (leases that expire anyway).
    func write<T>(_ operation: String, durable: Bool = true, rethrowing body: () throws -> T) throws -> T {
        gate.enter()
        let result: T
        do {
            defer { gate.leave() }
            try begin(immediate: true, operation: operation)
            do {
                result = try body()
                try step("COMMIT", operation: operation)
            } catch {
                rollbackQuietly()
                throw error
            }
        }
        if durable && gate.syncsCommits { try syncWAL() }
        return result
    }

    /// `write` for a body that throws only `QueueError`.
    func write<T>(
        _ operation: String, durable: Bool = true, _ body: () throws(QueueError) -> T
    ) throws(QueueError) -> T {
        do {
            return try write(operation, durable: durable, rethrowing: body)
        } catch let error as QueueError {
            throw error
        } catch {
            // Unreachable: the door and the body throw only `QueueError`.
            throw QueueError.sqlite(code: SQLITE_MISUSE, message: "\(error)", operation: operation)
        }
    }

    /// Runs `body` in one read transaction (one snapshot), after the schema guard; no turn, no lock, no sync.
    func read<T>(_ operation: String, _ body: () throws(QueueError) -> T) throws(QueueError) -> T {
        try begin(immediate: false, operation: operation)
        do {
            let result = try body()
            try step("COMMIT", operation: operation)
            return result
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Opens a transaction and checks the schema is still the one verified at open (`schemaGuard`).
    private func begin(immediate: Bool, operation: String) throws(QueueError) {
        try step(immediate ? "BEGIN IMMEDIATE" : "BEGIN", operation: operation)
        do {
            try reverifySchemaIfChanged()
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Steps a cached statement that returns no rows (BEGIN and COMMIT: prepared once, not parsed per write).
    private func step(_ sql: String, operation: String) throws(QueueError) {
        try statement(sql, operation: operation).run()
    }

    /// Compares the schema again when its cookie moved (read from memory): a trigger planted while a long-lived
    /// consumer runs would otherwise fire inside its next ack. Under `BEGIN IMMEDIATE` it cannot change after this.
    private func reverifySchemaIfChanged() throws(QueueError) {
        guard let schemaGuard else { return }
        let cookie = try scalarInt("PRAGMA schema_version", operation: "reading the schema cookie")
        guard cookie != schemaGuard.cookie else { return }
        try schemaGuard.check(self)
        self.schemaGuard = (schemaGuard.check, cookie)
    }

    func rollbackQuietly() {
        if let handle, sqlite3_get_autocommit(handle) == 0 {
            sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
        }
    }

    /// Syncs the WAL through SQLite's own file object (its descriptor and its sync: `fdatasync` here), as a
    /// `synchronous=FULL` commit would have before returning.
    private func syncWAL() throws(QueueError) {
        let operation = "syncing the committed records to disk"
        guard let handle else {
            throw QueueError.sqlite(code: SQLITE_MISUSE, message: "the queue was closed", operation: operation)
        }
        var file: UnsafeMutablePointer<sqlite3_file>?
        let found = sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file)
        guard found == SQLITE_OK, let file, let sync = file.pointee.pMethods?.pointee.xSync else {
            throw QueueError.sqlite(
                code: SQLiteExtendedCode.ioErrorFsync, message: "SQLite gave no WAL file to sync (\(found))",
                operation: operation)
        }
        let rc = sync(file, SQLITE_SYNC_NORMAL)
        gate.walSyncs += 1
        guard rc == SQLITE_OK else {
            // Committed, and other processes may already read it, but a power loss could still undo it.
            throw QueueError.sqlite(
                code: rc,
                message: "the records were committed but syncing the WAL failed ("
                    + String(cString: sqlite3_errstr(rc))
                    + "); they may not survive a power loss (is the disk failing or full?)",
                operation: operation)
        }
    }
}
