import CSQLite
import Glibc
@_exported import EventQueueTestSupport
import Testing

@testable import EventQueue

/// Raw SQLite access for assertions that must not go through the code under test.
final class RawDatabase {
    let handle: OpaquePointer

    init(path: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK, let db else {
            throw RawError(message: "cannot open \(path)")
        }
        sqlite3_busy_timeout(db, 5000)
        handle = db
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    struct RawError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "?"
            sqlite3_free(error)
            throw RawError(message: message)
        }
    }

    /// All rows of a query, each column as text (NULL as nil).
    func rows(_ sql: String) throws -> [[String?]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw RawError(message: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        var result: [[String?]] = []
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw RawError(message: String(cString: sqlite3_errmsg(handle))) }
            var row: [String?] = []
            for column in 0..<sqlite3_column_count(statement) {
                row.append(sqlite3_column_text(statement, column).map { String(cString: $0) })
            }
            result.append(row)
        }
        return result
    }

    func scalar(_ sql: String) throws -> String? {
        try rows(sql).first?.first ?? nil
    }
}

func event(_ name: String, user: String, key: String? = nil) -> Record {
    Record.event(name, user: .externalID(user), properties: ["n": .string(name)], idempotencyKey: key)
}

/// A suite over one fresh queue file that writes through the library: the file's path and an `enqueue`.
protocol QueueFileSuite {
    var directory: Scratch { get }
}

extension QueueFileSuite {
    var path: String { directory.file("q.db") }

    func enqueue(_ records: [Record]) throws -> [Int64] {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        return try writer.enqueue(contentsOf: records)
    }
}
