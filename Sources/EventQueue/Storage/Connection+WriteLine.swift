import CSQLite

/// Writes in line (`WriteTurn`), and the commit's sync moved out of the turn when others wait for it.
///
/// Why the sync moves: a commit with `synchronous=FULL` holds SQLite's write lock through its fsync (110-170 us on
/// this machine's disk, most of the 0.2 ms a commit takes), so writers in line wait for each other's fsyncs one by
/// one. With writers behind it, the holder commits with `synchronous=NORMAL` (the frames are written, not synced),
/// gives the turn and the lock back, then syncs the WAL itself before the enqueue returns. The next writer
/// commits while it syncs, and the kernel folds the overlapping syncs of one file into fewer flushes. The promise
/// is unchanged: an enqueue that returned is on disk. A WAL frame is only recovered after a power loss when every
/// frame before it is (checksums chain), and a sync writes every frame written before it, so no commit becomes
/// durable ahead of an earlier one. Alone in line a writer commits with `FULL` as before: nothing would overlap.
/// Measured: docs/PERFORMANCE.md section 5.
extension Connection {
    /// Runs `body`, a write (a statement in autocommit, or a whole transaction), in this connection's turn.
    /// Without a line (never joined, or unusable) it just runs it.
    func inTurn<T>(_ body: () throws(QueueError) -> T) throws(QueueError) -> T {
        do {
            return try inTurn(rethrowing: body)
        } catch let error as QueueError {
            throw error
        } catch {
            // Unreachable: the body and the sync throw only `QueueError`.
            throw QueueError.sqlite(code: SQLITE_MISUSE, message: "\(error)", operation: "writing in turn")
        }
    }

    /// `inTurn` for a body that throws errors of its own (`transaction(rethrowing:)`): they are rethrown as they
    /// are, after the turn is given back.
    func inTurn<T>(rethrowing body: () throws -> T) throws -> T {
        guard let entry = enterTurn() else { return try body() }
        let result: T
        do {
            result = try body()
        } catch {
            leaveTurn(entry)
            throw error
        }
        leaveTurn(entry)
        if entry.syncsAfter { try syncWAL() }
        return result
    }

    /// A write in line: the line, and whether the WAL is synced after the turn is given back.
    struct TurnEntry {
        let line: WriteTurn
        let syncsAfter: Bool
    }

    /// Waits in line (at most the busy timeout, which counts from here: `BusyWait.begin`), then sets the
    /// connection's `synchronous` for this write. Nil: not in a line, or a write of this connection is already in
    /// its turn (a statement inside a transaction).
    private func enterTurn() -> TurnEntry? {
        guard writeLinePolicy == .always, let line = openedWriteLine(), !line.isHeld else { return nil }
        let start = BusyWait.monotonicNanoseconds()
        let (budget, overflow) = Int64(max(0, busyTimeoutMilliseconds)).multipliedReportingOverflow(by: 1_000_000)
        let held = line.take(timeoutNanoseconds: overflow ? Int64.max : budget)
        if fullDurability {
            try? setSynchronous(full: !(held && line.othersWaiting), operation: "choosing where the commit syncs")
        }
        busyWait.begin(waitStartedAt: start, holding: held ? line : nil)
        // Whatever the pragma's outcome: a connection left at NORMAL always syncs after (durability is kept).
        return TurnEntry(line: line, syncsAfter: fullDurability && !synchronousIsFull)
    }

    private func leaveTurn(_ entry: TurnEntry) {
        busyWait.end()
        entry.line.give()
    }

    /// The writers' line, opened at the first write that asks for it.
    private func openedWriteLine() -> WriteTurn? {
        if !writeLineOpened {
            writeLineOpened = true
            writeLine = WriteTurn.open(queuePath: path)
        }
        return writeLine
    }

    /// Sets `PRAGMA synchronous` to FULL or NORMAL when it differs (a pragma without I/O); `synchronousIsFull` says
    /// what it is, also after a failure. For a write in turn here, and for the consumer's claims
    /// (`QueueConsumer.withRelaxedSync`).
    func setSynchronous(full: Bool, operation: String) throws(QueueError) {
        guard full != synchronousIsFull else { return }
        try execute(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", operation: operation)
        synchronousIsFull = full
    }

    /// Syncs the WAL through SQLite's own file object (its descriptor and its sync: `fdatasync` here), as a
    /// `FULL` commit would have before returning.
    func syncWAL() throws(QueueError) {
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
        walSyncs += 1
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
