import CSQLite
import Glibc
import Testing

@testable import EventQueue

@Suite struct MigrationTests {
    @Test func freshFileGetsLatestSchemaAndPragmas() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("PRAGMA user_version") == String(Migrations.latestVersion))
        #expect(try raw.scalar("PRAGMA journal_mode") == "wal")
        #expect(try raw.scalar("PRAGMA auto_vacuum") == "2")
        let tables = try raw.rows("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").map { $0[0] }
        #expect(tables.contains("records"))
        #expect(tables.contains("delivered_keys"))
        #expect(try raw.scalar("SELECT sql FROM sqlite_schema WHERE name = 'records'")?.contains("STRICT") == true)
    }

    @Test func embeddedMigrationsAreNumberedFromOne() {
        #expect(!Migrations.embedded.isEmpty)
        for (offset, migration) in Migrations.embedded.enumerated() {
            #expect(migration.version == offset + 1)
            #expect(!migration.sql.isEmpty)
        }
    }

    @Test func filesAndJournalsAreGroupShared() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let previous = umask(0o077)  // the most restrictive umask a writer could run with
        defer { umask(previous) }
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("e", user: "u1"))
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            #expect(stat(file, &info) == 0, "\(file) should exist while the writer is open")
            #expect(info.st_mode & 0o777 == 0o660, "\(file) has mode \(String(info.st_mode & 0o777, radix: 8))")
        }
        writer.close()
    }

    @Test func closingTheLastConnectionRemovesTheWAL() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("e", user: "u1"))
        writer.close()
        #expect(access(path + "-wal", F_OK) != 0)
    }

    /// Upgrading from every earlier version: build the file with migrations 1...v only, then open it.
    @Test(arguments: 1...max(1, Migrations.latestVersion))
    func upgradesFromEachEarlierVersion(version: Int) throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        try connection.execute("PRAGMA auto_vacuum = INCREMENTAL", operation: "test")
        _ = try connection.scalarText("PRAGMA journal_mode = WAL", operation: "test")
        try Migrations.migrate(connection, to: version)
        #expect(try connection.scalarInt("PRAGMA user_version", operation: "test") == Int64(version))
        // A record written at the old version survives the upgrade.
        try connection.execute(
            #"INSERT INTO records (kind, payload) VALUES ('event', '{"external_id":"u1","name":"old"}')"#,
            operation: "test")
        connection.close()
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        #expect(try consumer.admin.stats().schemaVersion == Migrations.latestVersion)
        #expect(try consumer.admin.peek().map(\.payload) == [#"{"external_id":"u1","name":"old"}"#])
    }

    @Test func refusesANewerFileWithoutTouchingIt() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        do {
            let raw = try RawDatabase(path: path)
            try raw.execute("PRAGMA user_version = \(Migrations.latestVersion + 1)")
            try raw.execute("CREATE TABLE future (x)")
        }
        let before = try fileBytes(path)
        #expect(
            throws: QueueError.schemaTooNew(
                path: path, found: Migrations.latestVersion + 1,
                supported: Migrations.latestVersion)
        ) {
            _ = try QueueWriter(path: path)
        }
        #expect(try fileBytes(path) == before)
        #expect(access(path + "-wal", F_OK) != 0, "a refused file must not even get a WAL")
        let error = QueueError.schemaTooNew(path: path, found: 9, supported: 1)
        #expect(error.description.contains("upgrade EventQueue"))
    }

    @Test func refusesAForeignFile() throws {
        let directory = Scratch()
        let path = directory.file("notes.txt")
        let content = Array(repeating: "not a database\n", count: 200).joined()
        let fd = open(path, O_WRONLY | O_CREAT, 0o644)
        _ = content.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        #expect(throws: QueueError.notAQueueFile(path: path)) { _ = try QueueWriter(path: path) }
        #expect(try fileBytes(path) == Array(content.utf8))
    }

    @Test func missingDirectoryIsAClearError() throws {
        let path = "/nonexistent-eventqueue-dir/q.db"
        do {
            _ = try QueueWriter(path: path)
            Issue.record("opening in a missing directory should fail")
        } catch {
            guard case .cannotOpen(_, let reason) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(reason.contains("does not exist"))
        }
    }

    /// Several threads (separate connections, as separate processes would have) open a new file at once: exactly
    /// one migrates, all succeed, and the schema is created once. The process-level variant is in queuectlTests.
    @Test func concurrentOpenersMigrateOnce() async throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let writer = try QueueWriter(path: path)
                    defer { writer.close() }
                    return try writer.enqueue(event("e\(index)", user: "u\(index)"))
                }
            }
            var ids: Set<Int64> = []
            for try await id in group { ids.insert(id) }
            #expect(ids.count == 8)
        }
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "8")
        #expect(try raw.scalar("PRAGMA user_version") == String(Migrations.latestVersion))
    }
}

func fileBytes(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw RawDatabase.RawError(message: "cannot read \(path)") }
    defer { close(fd) }
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count <= 0 { break }
        result.append(contentsOf: chunk[0..<count])
    }
    return result
}
