import CSQLite

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

    /// Binds `values` to `?1`, `?2`, ... in order; `nil` binds NULL.
    func bind(values: [(any SQLValue)?]) {
        for (offset, value) in values.enumerated() {
            if let value {
                value.bind(to: self, at: Int32(offset + 1))
            } else {
                sqlite3_bind_null(raw, Int32(offset + 1))
            }
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

/// A value `Statement.bind(values:)` binds: an integer or text.
protocol SQLValue {
    func bind(to statement: Statement, at index: Int32)
}

extension Int64: SQLValue {
    func bind(to statement: Statement, at index: Int32) { statement.bind(index, self) }
}

extension Int: SQLValue {
    func bind(to statement: Statement, at index: Int32) { statement.bind(index, Int64(self)) }
}

extension String: SQLValue {
    func bind(to statement: Statement, at index: Int32) { statement.bind(index, self) }
}

/// SQLite's extended result codes that the queue tells apart, by name: `sqlite3.h` defines them as macros
/// (`SQLITE_IOERR_WRITE` is `SQLITE_IOERR | (3<<8)`) that Swift does not import.
enum SQLiteExtendedCode {
    /// `SQLITE_IOERR_WRITE`: a write(2) failed.
    static let ioErrorWrite: Int32 = SQLITE_IOERR | (3 << 8)
    /// `SQLITE_IOERR_FSYNC`: an fsync(2) failed.
    static let ioErrorFsync: Int32 = SQLITE_IOERR | (4 << 8)
    /// `SQLITE_CONSTRAINT_CHECK`: a CHECK constraint refused the row.
    static let constraintCheck: Int32 = SQLITE_CONSTRAINT | (1 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`: the row's primary key is taken.
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
}
