import Foundation

/// The `sqlite3` command-line shell, for what a foreign writer does to the queue file (this test target links
/// no SQLite of its own): one-off statements, and a write lock held for as long as a test wants.
enum SQLiteShell {
    static let executable = URL(fileURLWithPath: "/usr/bin/sqlite3")

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `sql` against `path`, waiting up to 5 s for a lock; returns what the shell printed.
    @discardableResult
    static func run(_ path: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-bail", "-cmd", ".timeout 5000", path, sql]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let complaints = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "sqlite3 exited with \(process.terminationStatus): "
                    + String(decoding: complaints, as: UTF8.self))
        }
        return String(decoding: printed, as: UTF8.self)
    }

    /// A foreign `INSERT` as docs/SCHEMA.md describes it; `createdAt` overrides the default (now).
    static func insert(_ path: String, kind: String = "event", payload: String, createdAt: Int64? = nil) throws {
        let quoted = "'" + payload.replacingOccurrences(of: "'", with: "''") + "'"
        if let createdAt {
            try run(
                path, "INSERT INTO records (kind, payload, created_at_ms) VALUES ('\(kind)', \(quoted), \(createdAt))")
        } else {
            try run(path, "INSERT INTO records (kind, payload) VALUES ('\(kind)', \(quoted))")
        }
    }

    /// Another process holding the queue's write lock (`BEGIN IMMEDIATE`) until `release()`.
    ///
    /// `@unchecked Sendable`: it is set up on one thread and released once, possibly from another thread.
    final class WriteLock: @unchecked Sendable {
        private let process = Process()
        private let input = Pipe()
        private let output = Pipe()

        /// Returns once the lock is held: the shell prints a marker only after `BEGIN IMMEDIATE` succeeded, and
        /// flushes after every statement.
        init(path: String) throws {
            process.executableURL = SQLiteShell.executable
            process.arguments = ["-bail", path]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            input.fileHandleForWriting.write(Data(".timeout 5000\nBEGIN IMMEDIATE;\nSELECT 'locked';\n".utf8))
            var printed = ""
            while !printed.contains("locked") {
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else { throw Failure(description: "sqlite3 could not take the write lock") }
                printed += String(decoding: chunk, as: UTF8.self)
            }
        }

        /// Commits (nothing was written) and waits for the shell to exit.
        func release() {
            input.fileHandleForWriting.write(Data("COMMIT;\n".utf8))
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }
}
