import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// One SQLite connection with a cache of prepared statements. Not thread-safe by design: SQLite's multi-thread
/// mode has no per-call mutex, and the owner guarantees one caller at a time, keeping an enqueue to one step.
final class Connection {
    let path: String
    let busyTimeoutMilliseconds: Int
    private(set) var handle: OpaquePointer?
    /// How this connection waits to write and what its writes promise (`Connection+Write.swift`).
    let gate: WriteGate
    /// How the schema was verified at open and the schema cookie then: the write door checks again when it moves.
    var schemaGuard: (check: (Connection) throws(QueueError) -> Void, cookie: Int64)?
    private var statements: [String: Statement] = [:]

    /// Opens (creating if needed, with mode 0660) the database at `path`; a read-only connection never creates it.
    /// `uriParameters` (read-only only) opens `file:PATH?PARAMETERS`, e.g. `mode=ro&immutable=1` for salvage.
    init(
        path: String, busyTimeoutMilliseconds: Int, readOnly: Bool = false, uriParameters: String? = nil
    ) throws(QueueError) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        gate = WriteGate(queuePath: path, timeoutMilliseconds: busyTimeoutMilliseconds)
        var flags = SQLITE_OPEN_NOMUTEX
        // A path is a path: never an SQLite URI (see QueuePath), and never anything but a regular file.
        var name = QueuePath.sqliteName(for: path)
        let state = try QueuePath.inspect(path, allowingLinks: readOnly)
        // (Salvage's read-only URI opens take no locks and create no -shm.)
        if !(readOnly && (uriParameters != nil || state == .missing)) {
            try QueuePath.requireRoomForSharedMemory(path)
        }
        if readOnly, let uriParameters {
            name = "file:" + QueuePath.uriEscaped(path) + "?" + uriParameters
            flags |= SQLITE_OPEN_URI
        }
        if readOnly {
            guard state != .missing, access(path, F_OK) == 0 else {
                throw QueueError.cannotOpen(path: path, reason: "no such file")
            }
            flags |= SQLITE_OPEN_READONLY
        } else {
            switch state {
            case .missing:
                try QueuePath.createFileIfMissing(path: path)
                // Another process may have put something there in between: check what we are about to open.
                if try QueuePath.inspect(path) == .empty { QueuePath.adoptEmpty(path) }
            case .empty:
                QueuePath.adoptEmpty(path)
            case .existing:
                break
            }
            flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(name, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw QueueError.cannotOpen(path: path, reason: QueuePath.accessProblem(path) ?? message)
        }
        if !readOnly, sqlite3_db_readonly(db, "main") == 1 {
            // SQLite quietly falls back to read-only when it cannot open for writing; a queue must say why now.
            sqlite3_close_v2(db)
            throw QueueError.readOnly(
                path: path, detail: QueuePath.accessProblem(path) ?? "SQLite could only open it read-only")
        }
        // `trusted_schema` stays on: the queue's own CHECK and generated column call JSON functions that SQLite 3.40
        // does not mark innocuous. The schema comparison at open and at every write (`QueueSchema`) keeps planted
        // triggers, views and indexes out.
        handle = db
        sqlite3_extended_result_codes(db, 1)
        gate.install(on: db)
    }

    /// A private in-memory database, not a queue (`QueueSchema.expected`: the schema the migrations build).
    init(inMemoryFor operation: String) throws(QueueError) {
        path = ":memory:"
        busyTimeoutMilliseconds = 0
        gate = WriteGate(queuePath: path, timeoutMilliseconds: 0)
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw QueueError.sqlite(
                code: SQLITE_NOMEM, message: "cannot open an in-memory database", operation: operation)
        }
        handle = db
    }

    /// Runs `body` with a different busy timeout (a checkpoint that must not hold writers back), then restores it.
    func withBusyTimeout<T>(
        milliseconds: Int, _ body: () throws(QueueError) -> T
    ) throws(QueueError) -> T {
        gate.timeoutMilliseconds = milliseconds
        defer { gate.timeoutMilliseconds = busyTimeoutMilliseconds }
        return try body()
    }

    deinit {
        close()
    }

    /// Finalizes every statement and closes. The last connection to close checkpoints and removes the WAL.
    func close() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Runs SQL text that returns no rows (pragmas, DDL, BEGIN/COMMIT).
    func execute(_ sql: String, operation: String) throws(QueueError) {
        let db = try requireHandle(operation: operation)
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(code: rc, operation: operation) }
    }

    /// A cached prepared statement for `sql`, reset, with `values` bound to `?1`, `?2`, ... (`nil`: NULL).
    func statement(_ sql: String, operation: String, _ values: (any SQLValue)?...) throws(QueueError) -> Statement {
        try statement(sql, operation: operation, values: values)
    }

    func statement(_ sql: String, operation: String, values: [(any SQLValue)?]) throws(QueueError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            cached.bind(values: values)
            return cached
        }
        let db = try requireHandle(operation: operation)
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(code: rc, operation: operation) }
        let statement = Statement(raw: raw, connection: self, operation: operation)
        statements[sql] = statement
        statement.bind(values: values)
        return statement
    }

    /// Runs `sql` to completion with `values` bound to `?1`, `?2`, ...; returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, operation: String, _ values: (any SQLValue)?...) throws(QueueError) -> Int {
        try run(sql, operation: operation, values: values)
    }

    @discardableResult
    func run(_ sql: String, operation: String, values: [(any SQLValue)?]) throws(QueueError) -> Int {
        try statement(sql, operation: operation, values: values).run()
        return changes
    }

    /// Every row of `sql` (with `values` bound to `?1`, `?2`, ...), each as `row` reads it.
    func rows<T>(
        _ sql: String, operation: String, _ values: (any SQLValue)?..., row: (Statement) throws(QueueError) -> T
    ) throws(QueueError) -> [T] {
        let statement = try statement(sql, operation: operation, values: values)
        defer { statement.reset() }
        var rows: [T] = []
        while try statement.step() { rows.append(try row(statement)) }
        return rows
    }

    /// The first row of `sql` (with `values` bound) as `row` reads it, or `nil` when there is none.
    func firstRow<T>(
        _ sql: String, operation: String, _ values: (any SQLValue)?..., row: (Statement) throws(QueueError) -> T
    ) throws(QueueError) -> T? {
        let statement = try statement(sql, operation: operation, values: values)
        defer { statement.reset() }
        return try statement.step() ? try row(statement) : nil
    }

    func scalarInt(_ sql: String, operation: String, _ values: (any SQLValue)?...) throws(QueueError) -> Int64 {
        let statement = try statement(sql, operation: operation, values: values)
        defer { statement.reset() }
        guard try statement.step() else { return 0 }
        return statement.int64(0)
    }

    func hasTable(_ name: String) throws(QueueError) -> Bool {
        let sql = "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1"
        return try scalarInt(sql, operation: "reading the schema", name) > 0
    }

    func scalarText(_ sql: String, operation: String, _ values: (any SQLValue)?...) throws(QueueError) -> String? {
        let statement = try statement(sql, operation: operation, values: values)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// The size in bytes of a stored TEXT or BLOB value of each row, read from the row's header only
    /// (`sqlite3_blob_open` never loads the value; `length()` would), so a row too large is refused unread.
    func storedBytes(table: String, column: String, rowids: [Int64]) -> [Int64: Int] {
        guard let handle, !rowids.isEmpty else { return [:] }
        var sizes: [Int64: Int] = [:]
        var blob: OpaquePointer?
        defer { if let blob { sqlite3_blob_close(blob) } }
        for rowid in rowids {
            if let open = blob {
                // A failed reopen leaves the handle aborted: close it and open a new one for the next row.
                guard sqlite3_blob_reopen(open, rowid) == SQLITE_OK else {
                    sqlite3_blob_close(open)
                    blob = nil
                    continue
                }
            } else if sqlite3_blob_open(handle, "main", table, column, rowid, 0, &blob) != SQLITE_OK {
                if let failed = blob { sqlite3_blob_close(failed) }
                blob = nil
                continue
            }
            if let blob { sizes[rowid] = Int(sqlite3_blob_bytes(blob)) }
        }
        return sizes
    }

    var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    var changes: Int {
        handle.map { Int(sqlite3_changes($0)) } ?? 0
    }

    private func requireHandle(operation: String) throws(QueueError) -> OpaquePointer {
        guard let handle else {
            throw QueueError.sqlite(code: SQLITE_MISUSE, message: "the queue was closed", operation: operation)
        }
        return handle
    }

    /// Maps an SQLite result code to the error an operator can act on.
    func error(code: Int32, operation: String) -> QueueError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        // SQLite reports ENOSPC as SQLITE_FULL on most paths, but as an I/O error when growing the -shm or
        // syncing; the errno of the failed system call says which it really was.
        let systemError = handle.map { sqlite3_system_errno($0) } ?? 0
        if code & 0xFF == SQLITE_IOERR || code & 0xFF == SQLITE_CANTOPEN, systemError == ENOSPC || systemError == EDQUOT
        {
            return .diskFull(path: path, detail: "\(message) (\(String(cString: strerror(systemError))))")
        }
        switch code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED:
            return .busy(path: path, timeoutMilliseconds: busyTimeoutMilliseconds)
        case SQLITE_NOTADB:
            return .notAQueueFile(path: path)
        case SQLITE_CORRUPT:
            return .corrupt(path: path, detail: message)
        case SQLITE_FULL:
            return .diskFull(path: path, detail: message)
        case SQLITE_READONLY:
            return .readOnly(path: path, detail: QueuePath.accessProblem(path) ?? message)
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH:
            // Typically the -wal or -shm file cannot be created or opened next to the queue file.
            return .cannotOpen(path: path, reason: QueuePath.accessProblem(path) ?? message)
        case SQLITE_CONSTRAINT where code == SQLiteExtendedCode.constraintCheck:
            // Our writers check every value before the INSERT, so a CHECK that fires was added by someone else: a
            // changed schema, not a reason to retry.
            return .unsafeQueueFile(
                path: path,
                reason: "its schema refused the write (\(message)) during \(operation): EventQueue checks every value "
                    + "first, so someone with write access changed the schema; run queuectl check --db \(path)")
        case SQLITE_IOERR where code == SQLiteExtendedCode.ioErrorWrite || code == SQLiteExtendedCode.ioErrorFsync:
            return .sqlite(code: code, message: message + " (is the disk full?)", operation: operation)
        default:
            return .sqlite(code: code, message: message, operation: operation)
        }
    }
}
