import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// One SQLite connection with a cache of prepared statements.
///
/// Not thread-safe by design: SQLite is opened in multi-thread mode (no per-call mutex), and the owner (a
/// writer, a consumer, or the daemon's dedicated executor) guarantees one caller at a time. That is what keeps
/// an enqueue down to one prepared-statement step.
final class Connection {
    let path: String
    let busyTimeoutMilliseconds: Int
    private(set) var handle: OpaquePointer?
    let busyWait: BusyWait
    /// When this connection's writes wait in the writers' line (`Connection+WriteLine.swift`).
    var writeLinePolicy = WriteLinePolicy.never
    /// Whether a commit that returned must be on disk (`QueueOptions.Durability.full`): a writer in line with
    /// others behind it then syncs the WAL itself, after giving the turn back.
    var fullDurability = true
    /// The line, opened at the first write that asks for it (nil: none, or unusable).
    var writeLine: WriteTurn?
    var writeLineOpened = false
    /// The `synchronous` level set on the connection now (`Connection+WriteLine.swift` switches it per write).
    var synchronousIsFull = true
    /// WAL syncs this connection did itself after giving the turn back (tests read it).
    var walSyncs = 0
    private var statements: [String: Statement] = [:]

    /// Opens (creating if needed, with mode 0660) the database at `path`. A read-only connection never
    /// creates the file: inspecting a queue (`queuectl check`) must not change what it inspects.
    ///
    /// `uriParameters` (read-only only) opens `file:PATH?PARAMETERS`, e.g. `mode=ro&immutable=1` for salvage.
    init(
        path: String, busyTimeoutMilliseconds: Int, readOnly: Bool = false, uriParameters: String? = nil
    ) throws(QueueError) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        busyWait = BusyWait(timeoutMilliseconds: busyTimeoutMilliseconds)
        var flags = SQLITE_OPEN_NOMUTEX
        // A path is a path: never an SQLite URI (see QueuePath), and never anything but a regular file.
        var name = QueuePath.sqliteName(for: path)
        let state = try QueuePath.inspect(path, allowingLinks: readOnly)
        // (Salvage's read-only URI opens take no locks and create no -shm.)
        if !(readOnly && (uriParameters != nil || state == .missing)) {
            try QueuePath.requireRoomForSharedMemory(path)
        }
        if readOnly, let uriParameters {
            name = "file:" + Connection.uriEscaped(path) + "?" + uriParameters
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
                try Connection.createFileIfMissing(path: path)
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
            throw QueueError.cannotOpen(path: path, reason: Connection.accessProblem(path) ?? message)
        }
        if !readOnly, sqlite3_db_readonly(db, "main") == 1 {
            // SQLite quietly falls back to read-only when it cannot open for writing; a queue must say why now.
            sqlite3_close_v2(db)
            throw QueueError.readOnly(
                path: path, detail: Connection.accessProblem(path) ?? "SQLite could only open it read-only")
        }
        // The schema is input from every writer in the group: functions in planted triggers, views and
        // generated columns must not run with this process's privileges (only SQLITE_INNOCUOUS ones may).
        // Where the linked SQLite does not mark its JSON functions innocuous (3.40, Debian 12's), the queue's
        // own CHECK and generated column could not run with it off; there the schema comparison at open
        // (QueueSchema) is what keeps planted objects out, and no application function is ever registered.
        guard
            !Connection.jsonFunctionsAreInnocuous
                || sqlite3_exec(db, "PRAGMA trusted_schema = OFF", nil, nil, nil) == SQLITE_OK
        else {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_close_v2(db)
            throw QueueError.cannotOpen(path: path, reason: "could not turn trusted_schema off: \(message)")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        BusyWait.install(busyWait, on: db)
    }

    /// Whether this process's SQLite lets the queue's schema (JSON functions in a CHECK and a generated column)
    /// run with `trusted_schema=OFF`. Found out once per process, in a throw-away in-memory database.
    static let jsonFunctionsAreInnocuous: Bool = {
        var raw: OpaquePointer?
        guard sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
            let db = raw
        else {
            sqlite3_close_v2(raw)
            return false
        }
        defer { sqlite3_close_v2(db) }
        let probe = """
            PRAGMA trusted_schema = OFF;
            CREATE TABLE t (x TEXT CHECK (json_valid(x) AND json_type(x) = 'object'),
                y TEXT GENERATED ALWAYS AS (json_extract(x, '$.a')) STORED);
            INSERT INTO t (x) VALUES ('{"a":"b"}');
            """
        return sqlite3_exec(db, probe, nil, nil, nil) == SQLITE_OK
    }()

    /// Runs `body` with a different busy timeout (a checkpoint that must not hold writers back for long), then
    /// restores the connection's own.
    func withBusyTimeout<T>(
        milliseconds: Int, _ body: () throws(QueueError) -> T
    ) throws(QueueError) -> T {
        busyWait.timeoutMilliseconds = milliseconds
        defer { busyWait.timeoutMilliseconds = busyTimeoutMilliseconds }
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

    /// A cached prepared statement for `sql`, reset and with its bindings cleared.
    func statement(_ sql: String, operation: String) throws(QueueError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let db = try requireHandle(operation: operation)
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(code: rc, operation: operation) }
        let statement = Statement(raw: raw, connection: self, operation: operation)
        statements[sql] = statement
        return statement
    }

    /// Runs `body` in a transaction. `BEGIN IMMEDIATE` takes the write lock up front so the transaction can
    /// never fail half-way with SQLITE_BUSY the way a deferred read-then-write transaction can.
    func transaction<T>(
        immediate: Bool = true, operation: String, _ body: () throws(QueueError) -> T
    ) throws(QueueError) -> T {
        guard immediate else { return try runTransaction(immediate: false, operation, body) }
        return try inTurn { () throws(QueueError) in try runTransaction(immediate: true, operation, body) }
    }

    private func runTransaction<T>(
        immediate: Bool, _ operation: String, _ body: () throws(QueueError) -> T
    ) throws(QueueError) -> T {
        try begin(immediate: immediate, operation: operation)
        do {
            let result = try body()
            try execute("COMMIT", operation: operation)
            return result
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// The same door for a body that throws errors of its own (a batch whose caller reads its input inside it):
    /// they are rethrown as they are, after the rollback. Every transaction of the library opens through one of
    /// these two, so none skips the schema guard.
    func transaction<T>(
        immediate: Bool = true, operation: String, rethrowing body: () throws -> T
    ) throws -> T {
        guard immediate else { return try runTransaction(immediate: false, operation, rethrowing: body) }
        return try inTurn(rethrowing: { () throws in try runTransaction(immediate: true, operation, rethrowing: body) })
    }

    private func runTransaction<T>(
        immediate: Bool, _ operation: String, rethrowing body: () throws -> T
    ) throws -> T {
        try begin(immediate: immediate, operation: operation)
        do {
            let result = try body()
            try execute("COMMIT", operation: operation)
            return result
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// Opens a transaction and checks the schema is still the one verified at open (`schemaGuard`).
    private func begin(immediate: Bool, operation: String) throws(QueueError) {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN", operation: operation)
        do {
            try reverifySchemaIfChanged()
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    /// How this connection's schema was verified at open (`QueueSchema.verify` or `verifyNames`), and the schema
    /// cookie it was verified at. `PRAGMA trusted_schema=OFF` cannot be set with this SQLite (see
    /// `jsonFunctionsAreInnocuous`), so a trigger another group member plants while a long-lived consumer runs
    /// would otherwise fire inside its next ack. Every transaction reads the cookie (a header field SQLite keeps
    /// in memory: no I/O) and, when it moved, compares the schema again before any statement of its own runs.
    /// Inside `BEGIN IMMEDIATE` nobody can change the schema between that check and our statements.
    var schemaGuard: (check: (Connection) throws(QueueError) -> Void, cookie: Int64)?

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

    /// Reads one integer from a single-row query such as `PRAGMA user_version`.
    func scalarInt(_ sql: String, operation: String) throws(QueueError) -> Int64 {
        let statement = try statement(sql, operation: operation)
        defer { statement.reset() }
        guard try statement.step() else { return 0 }
        return statement.int64(0)
    }

    /// Reads one text value from a single-row query such as `PRAGMA journal_mode`.
    func scalarText(_ sql: String, operation: String) throws(QueueError) -> String? {
        let statement = try statement(sql, operation: operation)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// The size in bytes of a stored TEXT or BLOB value of each row, read from the row's header only
    /// (`sqlite3_blob_open` never loads the value): how the daemon refuses a row too large to be a record without
    /// reading it (no SQL function does that for TEXT on SQLite 3.40: `length()` counts characters, reading the
    /// whole value). One handle is opened and moved from row to row (`sqlite3_blob_reopen`: no statement is
    /// compiled per row). A row that does not exist, or whose value is not TEXT or BLOB, is left out.
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
            return .readOnly(path: path, detail: Connection.accessProblem(path) ?? message)
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH:
            // Typically the -wal or -shm file cannot be created or opened next to the queue file.
            return .cannotOpen(path: path, reason: Connection.accessProblem(path) ?? message)
        case SQLITE_IOERR where code == SQLiteExtendedCode.ioErrorWrite || code == SQLiteExtendedCode.ioErrorFsync:
            // ENOSPC surfaces as an I/O error on some paths; say so when the disk is the likely cause.
            return .sqlite(code: code, message: message + " (is the disk full?)", operation: operation)
        default:
            return .sqlite(code: code, message: message, operation: operation)
        }
    }

    /// Creates the database file with mode 0660 before SQLite opens it. SQLite gives the `-wal` and `-shm`
    /// files the main file's mode, so the writers' group and the daemon's user can share all three.
    private static func createFileIfMissing(path: String) throws(QueueError) {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o660)
        if fd >= 0 {
            fchmod(fd, 0o660)  // the umask may have removed group bits
            Glibc.close(fd)
            return
        }
        let code = errno
        switch code {
        case EEXIST:
            return
        case ENOENT:
            throw QueueError.cannotOpen(
                path: path,
                reason: "the directory \(directoryName(of: path)) does not exist; create it or choose another --db")
        case EACCES, EPERM:
            throw QueueError.cannotOpen(
                path: path,
                reason: accessProblem(path)
                    ?? "permission denied creating it in \(directoryName(of: path)); run as a user in the "
                    + "queue's group or fix the directory's permissions")
        case EROFS:
            throw QueueError.readOnly(path: path, detail: "the filesystem is mounted read-only")
        case ENOSPC:
            throw QueueError.diskFull(path: path, detail: "no space to create the file")
        default:
            throw QueueError.cannotOpen(path: path, reason: String(cString: strerror(code)))
        }
    }

    /// Why this process cannot read and write the queue file (and create its `-wal` and `-shm` beside it), in
    /// words an operator can act on; `nil` when nothing is visibly wrong.
    static func accessProblem(_ path: String) -> String? {
        let directory = directoryName(of: path)
        let user = "user \(geteuid()) (group \(getegid()))"
        var directoryInfo = stat()
        guard stat(directory, &directoryInfo) == 0 else {
            if errno == ENOENT {
                return "the directory \(directory) does not exist; create it or choose another --db"
            }
            return "\(user) cannot reach the directory \(directory) (\(String(cString: strerror(errno)))); fix "
                + "the permissions of its parent directories"
        }
        if access(directory, X_OK) != 0 {
            return "\(user) may not enter the directory \(directory) (mode \(octal(directoryInfo.st_mode)), owner "
                + "\(directoryInfo.st_uid), group \(directoryInfo.st_gid)); run as its owner or a member of its group, "
                + "or fix the directory's permissions"
        }
        var filesystem = statvfs()
        if statvfs(directory, &filesystem) == 0, filesystem.f_flag & UInt(ST_RDONLY) != 0 {
            return "the filesystem holding \(directory) is mounted read-only; remount it read-write or move the "
                + "queue to a writable filesystem"
        }
        var fileInfo = stat()
        if stat(path, &fileInfo) == 0, access(path, R_OK | W_OK) != 0 {
            return "\(user) may not read and write it (mode \(octal(fileInfo.st_mode)), owner \(fileInfo.st_uid), "
                + "group \(fileInfo.st_gid)); run as its owner or a member of its group, or fix its permissions "
                + "(queue files are 0660)"
        }
        if access(directory, W_OK | X_OK) != 0 {
            return "\(user) may not create files in \(directory) (mode \(octal(directoryInfo.st_mode)), owner "
                + "\(directoryInfo.st_uid), group \(directoryInfo.st_gid)), and SQLite needs its -wal and -shm "
                + "there; run as its owner or a member of its group, or fix the directory's permissions"
        }
        for suffix in ["-wal", "-shm"] {
            var info = stat()
            if stat(path + suffix, &info) == 0, access(path + suffix, R_OK | W_OK) != 0 {
                return "\(user) may not read and write \(path)\(suffix) (mode \(octal(info.st_mode)), owner "
                    + "\(info.st_uid)); fix its permissions (0660, the queue's group)"
            }
        }
        return nil
    }

    private static func octal(_ mode: mode_t) -> String {
        "0" + String(Int(mode & 0o7777), radix: 8)
    }

    /// A path as the path part of an SQLite `file:` URI: `%`, `?` and `#` are percent-encoded.
    static func uriEscaped(_ path: String) -> String {
        var escaped = ""
        for character in path.unicodeScalars {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3F"
            case "#": escaped += "%23"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = path[..<slash]
        return directory.isEmpty ? "/" : String(directory)
    }
}

/// A prepared statement owned by its `Connection` (which finalizes it on close).
final class Statement {
    private let raw: OpaquePointer
    private unowned let connection: Connection
    private let operation: String

    init(raw: OpaquePointer, connection: Connection, operation: String) {
        self.raw = raw
        self.connection = connection
        self.operation = operation
    }

    func finalize() {
        sqlite3_finalize(raw)
    }

    func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(raw, index, value)
    }

    func bind(_ index: Int32, _ value: Int) {
        sqlite3_bind_int64(raw, index, Int64(value))
    }

    func bind(_ index: Int32, _ value: String?) {
        guard var value else {
            sqlite3_bind_null(raw, index)
            return
        }
        value.withUTF8 { bytes in
            _ = sqlite3_bind_text(
                raw, index, UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self),
                Int32(bytes.count), eventqueue_sqlite_transient())
        }
    }

    /// Binds UTF-8 bytes as TEXT without building a `String`.
    func bindText(_ index: Int32, utf8 bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            _ = sqlite3_bind_text(
                raw, index, UnsafeRawPointer(buffer.baseAddress)?.assumingMemoryBound(to: CChar.self),
                Int32(buffer.count), eventqueue_sqlite_transient())
        }
    }

    /// Advances; `true` when a row is available, `false` when done.
    func step() throws(QueueError) -> Bool {
        let rc = sqlite3_step(raw)
        switch rc {
        case SQLITE_ROW:
            return true
        case SQLITE_DONE:
            return false
        default:
            let error = connection.error(code: rc, operation: operation)
            sqlite3_reset(raw)
            throw error
        }
    }

    /// Steps to completion, ignoring rows.
    func run() throws(QueueError) {
        while try step() {}
        sqlite3_reset(raw)
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(raw, column)
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(raw, column) == SQLITE_NULL
    }

    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(raw, column) else { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The column's text when it is valid UTF-8, `nil` when it is NULL or not UTF-8 (garbage from a damaged
    /// page must not be silently "repaired" with replacement characters).
    func validatedText(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(raw, column) else { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(validating: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    func optionalInt64(_ column: Int32) -> Int64? {
        isNull(column) ? nil : int64(column)
    }
}

/// SQLite's extended result codes that the queue tells apart, by name: `sqlite3.h` defines them as macros
/// (`SQLITE_IOERR_WRITE` is `SQLITE_IOERR | (3<<8)`) that Swift does not import.
enum SQLiteExtendedCode {
    /// `SQLITE_IOERR_WRITE`: a write(2) failed.
    static let ioErrorWrite: Int32 = SQLITE_IOERR | (3 << 8)
    /// `SQLITE_IOERR_FSYNC`: an fsync(2) failed.
    static let ioErrorFsync: Int32 = SQLITE_IOERR | (4 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`: the row's primary key is taken.
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
}
