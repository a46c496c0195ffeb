import Testing

@testable import EventQueue

/// Issue 21: writers and consumers of different releases on one file. "The next release" is played by this
/// binary's migration runner applying one more migration (as a newer binary would, recording what it adds);
/// the binary under test then opens the file as the older release it is.
@Suite struct SchemaContractTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }
    var next: Int { Migrations.latestVersion + 1 }

    /// A file at this release's schema with one record, then migrated by "the next release" with `sql` (and
    /// the `schema_levels` row `levels`, when given).
    func migratedByTheNextRelease(
        _ sql: String = "CREATE INDEX records_created ON records (created_at_ms);",
        levels: (write: Int, read: Int)? = nil
    ) throws {
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("before", user: "u1"))
        writer.close()
        var migrationSQL = sql
        if let levels {
            migrationSQL +=
                "\nINSERT INTO schema_levels (version, write_level, read_level, release) "
                + "VALUES (\(next), \(levels.write), \(levels.read), '9.0.0');"
        }
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        defer { connection.close() }
        try Migrations.migrate(
            connection, to: next,
            using: Migrations.embedded + [Migration(version: next, name: "next", sql: migrationSQL)])
    }

    func expectAttackerRefusal(sourceLocation: SourceLocation = #_sourceLocation, _ open: () throws(QueueError) -> Void)
    {
        expectUnsafeQueueFile(reasonContaining: "someone with write access", sourceLocation: sourceLocation, open)
    }

    @Test func theBinarysLevelsAreTheNewestMigrationsLevels() throws {
        let writer = try QueueWriter(path: path)
        writer.close()
        let raw = try RawDatabase(path: path)
        let row = try raw.rows("SELECT write_level, read_level FROM schema_levels ORDER BY version DESC LIMIT 1")
        #expect(row == [[String(SchemaContract.writeLevel), String(SchemaContract.readLevel)]])
        // Messages name a schema's release from the migration table (issue 42), as the file records it.
        for version in SchemaContract.firstContractVersion...Migrations.latestVersion {
            #expect(
                try [Migrations.release(of: version)]
                    == raw.rows("SELECT release FROM schema_levels WHERE version = \(version)").map { $0.first ?? nil })
        }
        // Migration 5 records its own tables, so that a binary that knows the contract but not migration 5 (the
        // previous package of scripts/systemd-test) tolerates them.
        #expect(
            try raw.rows("SELECT name, version FROM schema_additions ORDER BY name")
                == [
                    ["delivered_user_keys", "6"], ["delivered_user_keys_age", "6"], ["queue_clock", "8"],
                    ["queue_clock_checkpoints", "8"], ["queue_drops", "7"],
                    ["queue_limits", "7"], ["records", "8"], ["records_other_user", "8"],
                    ["records_user_idempotency", "6"],
                    ["schema_additions", "5"], ["schema_levels", "5"],
                ])
    }

    @Test func aMigrationRecordsTheIndexesItAdds() throws {
        try migratedByTheNextRelease()
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("PRAGMA user_version") == String(next))
        #expect(
            try raw.rows("SELECT name, version, type, tbl_name FROM schema_additions WHERE version = \(next)")
                == [["records_created", String(next), "index", "records"]])
        #expect(
            try raw.scalar("SELECT sql FROM schema_additions WHERE name = 'records_created'")
                == raw.scalar("SELECT sql FROM sqlite_schema WHERE name = 'records_created'"))
    }

    @Test func aMigrationMayNotAddATrigger() throws {
        let writer = try QueueWriter(path: path)
        writer.close()
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        defer { connection.close() }
        let trigger = "CREATE TRIGGER t AFTER INSERT ON records BEGIN SELECT 1; END;"
        #expect(throws: QueueError.self) {
            try Migrations.migrate(
                connection, to: next,
                using: Migrations.embedded + [Migration(version: next, name: "next", sql: trigger)])
        }
        #expect(try connection.scalarInt("PRAGMA user_version", operation: "test") == Int64(Migrations.latestVersion))
    }

    /// The daemon was upgraded first: this release's writer and consumer keep working, and nothing migrates the
    /// file back.
    @Test func thisReleaseWritesAndConsumesAFileTheNextReleaseMigratedAdditively() throws {
        try migratedByTheNextRelease()
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("after", user: "u2"))
        writer.close()
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.count == 2)
        #expect(try consumer.ack(claim.records.map(\.id), lease: claim.lease) == 2)
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("PRAGMA user_version") == String(next))
        #expect(try raw.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'records_created'") == "1")
        let report = QueueCheck.run(path: path)
        #expect(report.isHealthy, "\(report.problems)")
        #expect(report.warnings.contains { $0.contains("additive") })
    }

    /// A table the next release adds (with its automatic index): this release's writer appends, its consumer
    /// claims and acks both records, `check` is healthy, and the table is left as it is.
    @Test func anAddedTableIsToleratedToo() throws {
        try migratedByTheNextRelease("CREATE TABLE notes (key TEXT PRIMARY KEY, value TEXT) STRICT;")
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'notes'") == "2")
        let writer = try QueueWriter(path: path)
        #expect(try writer.enqueue(event("after", user: "u2")) == 2)
        writer.close()
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.count == 2)
        #expect(try consumer.ack(claim.records.map(\.id), lease: claim.lease) == 2)
        let report = QueueCheck.run(path: path)
        #expect(report.isHealthy, "\(report.problems)")
        #expect(try raw.scalar("PRAGMA user_version") == String(next))
        #expect(try raw.scalar("SELECT count(*) FROM sqlite_schema WHERE tbl_name = 'notes'") == "2")
    }

    /// A column added to one of this release's tables, even a nullable one, is refused by this release's binaries
    /// (issue 42: judged from SQLite's catalog, not the CREATE text), so the next release must raise both levels
    /// or keep the column in a side table; the migration runner refuses it otherwise.
    @Test func anAddedColumnMustRaiseBothLevels() throws {
        do {
            try migratedByTheNextRelease("ALTER TABLE records ADD COLUMN origin TEXT;")
            Issue.record("a migration adding a column to records without raising the levels ran")
        } catch {
            #expect("\(error)".contains("must raise write_level and read_level"), "\(error)")
            #expect("\(error)".contains("table records replaces EventQueue's table"), "\(error)")
        }
    }

    @Test func aColumnNoMigrationRecordedIsRefusedByConsumers() throws {
        try migratedByTheNextRelease()
        let raw = try RawDatabase(path: path)
        try raw.execute("ALTER TABLE records ADD COLUMN planted TEXT")
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueConsumer(path: path) }
    }

    @Test func aPlantedTriggerInANewerFileIsStillRefusedAsAnAttack() throws {
        try migratedByTheNextRelease()
        let raw = try RawDatabase(path: path)
        try raw.execute("CREATE TRIGGER planted AFTER INSERT ON records BEGIN DELETE FROM records; END")
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueWriter(path: path) }
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueConsumer(path: path) }
    }

    @Test func aRegisteredTriggerIsRefusedAsAnAttack() throws {
        try migratedByTheNextRelease()
        let raw = try RawDatabase(path: path)
        try raw.execute("CREATE TRIGGER planted AFTER INSERT ON records BEGIN SELECT 1; END")
        try raw.execute(
            "INSERT INTO schema_additions SELECT name, \(next), 'index', tbl_name, sql FROM sqlite_schema "
                + "WHERE name = 'planted'")
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueWriter(path: path) }
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueConsumer(path: path) }
    }

    @Test func anIndexNoMigrationRecordedIsRefusedAsAnAttack() throws {
        try migratedByTheNextRelease()
        let raw = try RawDatabase(path: path)
        try raw.execute("CREATE UNIQUE INDEX planted ON records (payload)")
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueWriter(path: path) }
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueConsumer(path: path) }
        let report = QueueCheck.run(path: path)
        #expect(report.problems.contains { $0.contains("planted") && $0.contains("not created by EventQueue") })
    }

    @Test func aRecordedIndexWhoseSQLChangedIsRefusedByConsumers() throws {
        try migratedByTheNextRelease()
        let raw = try RawDatabase(path: path)
        try raw.execute("DROP INDEX records_created; CREATE INDEX records_created ON records (payload)")
        expectAttackerRefusal { () throws(QueueError) in _ = try QueueConsumer(path: path) }
    }

    @Test func aBreakingChangeForWritersNamesTheReleaseToUpgradeWritersTo() throws {
        let level = SchemaContract.writeLevel
        try migratedByTheNextRelease(
            "CREATE TABLE origins (id INTEGER PRIMARY KEY) STRICT;",
            levels: (write: level + 1, read: SchemaContract.readLevel))
        do {
            _ = try QueueWriter(path: path)
            Issue.record("a writer of write level \(level) must refuse a file that requires \(level + 1)")
        } catch {
            #expect(
                error
                    == .needsNewerRelease(
                        path: path, role: .writer, fileVersion: next, requiredLevel: level + 1, supportedLevel: level,
                        release: "9.0.0"))
            #expect(error.description.contains("upgrade this writer"))
            #expect(error.description.contains("to EventQueue 9.0.0 or later"))
            #expect(!error.description.contains("someone with write access"))
        }
    }

    @Test func aBreakingChangeForConsumersNamesTheDaemon() throws {
        try migratedByTheNextRelease(
            "CREATE INDEX records_created ON records (created_at_ms);", levels: (1, SchemaContract.readLevel + 1))
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("after", user: "u2"))
        writer.close()
        do {
            _ = try QueueConsumer(path: path)
            Issue.record("a consumer of read level 1 must refuse a file that requires 2")
        } catch {
            guard
                case .needsNewerRelease(
                    _, .consumer, _, SchemaContract.readLevel + 1, SchemaContract.readLevel, "9.0.0") =
                    error
            else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(error.description.contains("upgrade the daemon"))
        }
        #expect(!QueueCheck.run(path: path).isHealthy)
    }

    /// A writer upgraded first never moves a served file forward: the older daemon keeps consuming it. The
    /// daemon (any consumer) migrates it.
    @Test func aWriterNeverMigratesAnExistingFile() throws {
        do {
            let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
            try connection.execute("PRAGMA auto_vacuum = INCREMENTAL", operation: "test")
            _ = try connection.scalarText("PRAGMA journal_mode = WAL", operation: "test")
            try Migrations.migrate(connection, to: 4)
            connection.close()
        }
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("into-4", user: "u1"))
        writer.close()
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("PRAGMA user_version") == "4")
        let plan = try QueueMigration.plan(path: path)
        #expect(plan.steps.map(\.version) == Array(5...Migrations.latestVersion))
        #expect(plan.leavesContractlessReleasesBehind)
        #expect(try raw.scalar("PRAGMA user_version") == "4", "a dry run changes nothing")
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        #expect(try consumer.admin.stats().schemaVersion == Migrations.latestVersion)
        #expect(try consumer.admin.peek().count == 1)
    }

    @Test func migrateLeavesANewerFileAsItIs() throws {
        try migratedByTheNextRelease()
        let plan = try QueueMigration.run(path: path)
        #expect(plan.steps.isEmpty)
        #expect(plan.toVersion == next)
        #expect(Migrations.embedded[0].summary.isEmpty == false)
        #expect(Migrations.embedded[1].summary == "the drain lock.")
    }
}
