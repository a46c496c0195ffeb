import Testing

@testable import EventQueue

/// Issue 32 #4: a "recorded addition" could be any index, and indexes run code. A group member sets `user_version`
/// one above this release's, adds the `schema_levels` row (same levels) and records their own object in
/// `schema_additions`: writers, consumers and `queuectl check` must still refuse what could change the outcome of
/// their writes, and tolerate what a purely additive next migration adds (docs/SCHEMA.md, "Compatibility").
@Suite struct SchemaAdditionRuleTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }
    var next: Int { Migrations.latestVersion + 1 }

    /// A file of this release with a keyed record, on which a group member plays "the next release": `sql`, then
    /// the levels row of a next version that keeps both levels, and every object `sql` created or changed
    /// recorded in `schema_additions`, as a binary running a migration would record them.
    func plantedAsRecordedAddition(_ sql: String, recording names: [String]) throws -> RawDatabase {
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("before", user: "u1", key: "k1"))
        writer.close()
        let raw = try RawDatabase(path: path)
        try raw.execute(sql)
        let listed = names.map { "'\($0)'" }.joined(separator: ", ")
        try raw.execute(
            """
            INSERT INTO schema_levels (version, write_level, read_level, release) VALUES (\(next), \(SchemaContract.writeLevel), \(SchemaContract.readLevel), '9.0.0');
            INSERT OR REPLACE INTO schema_additions (name, version, type, tbl_name, sql)
                SELECT name, \(next), type, tbl_name, sql FROM sqlite_schema WHERE name IN (\(listed));
            PRAGMA user_version = \(next);
            """)
        return raw
    }

    /// Writers, the daemon's consumer open and `check` all refuse, naming the object, what is wrong with it and
    /// the release to upgrade to; nothing in the file changes.
    func expectRefusedEverywhere(
        _ name: String, because reason: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let before = try RawDatabase(path: path).rows("SELECT * FROM records")
        for expected in [reason, "Upgrade it to EventQueue 9.0.0", "someone with write access"] {
            expectUnsafeQueueFile(reasonContaining: expected, sourceLocation: sourceLocation) {
                () throws(QueueError) in _ = try QueueWriter(path: path)
            }
            expectUnsafeQueueFile(reasonContaining: expected, sourceLocation: sourceLocation) {
                () throws(QueueError) in _ = try QueueConsumer(path: path)
            }
        }
        let report = QueueCheck.run(path: path)
        #expect(!report.isHealthy, sourceLocation: sourceLocation)
        #expect(report.facts.contains { $0.name == "schema" && $0.value == "differs" }, sourceLocation: sourceLocation)
        #expect(
            report.problems.contains {
                $0.hasPrefix("schema: ") && $0.contains(name) && $0.contains(reason)
                    && $0.contains("recorded by schema version \(next) (EventQueue 9.0.0)")
            }, "\(report.problems)", sourceLocation: sourceLocation)
        #expect(!report.warnings.contains { $0.contains("additive") }, sourceLocation: sourceLocation)
        #expect(try RawDatabase(path: path).rows("SELECT * FROM records") == before, sourceLocation: sourceLocation)
    }

    /// The finding's first case: every ack of a keyed record failed with "integer overflow" after Braze had
    /// accepted the batch (21 records became 125 objects at Braze over 6 passes, then 20 were dead-lettered).
    @Test func anExpressionIndexOnDeliveredUserKeysIsRefused() throws {
        _ = try plantedAsRecordedAddition(
            "CREATE INDEX planted_overflow ON delivered_user_keys (abs(record_id * 0 - 9223372036854775807 - 1))",
            recording: ["planted_overflow"])
        try expectRefusedEverywhere("planted_overflow", because: "indexes an expression")
    }

    /// The finding's second case: every further enqueue failed (exit 74).
    @Test func aUniqueIndexOnRecordsKindIsRefused() throws {
        _ = try plantedAsRecordedAddition(
            "CREATE UNIQUE INDEX planted_unique ON records (kind)", recording: ["planted_unique"])
        try expectRefusedEverywhere("planted_unique", because: "is UNIQUE")
    }

    @Test func aPartialIndexOnRecordsIsRefused() throws {
        _ = try plantedAsRecordedAddition(
            // Every row but the one already queued overflows: the index can be created, no record added.
            "CREATE INDEX planted_partial ON records (id) WHERE abs(id * 0 - 9223372036854775807 - 1 + (id = 1)) > 0",
            recording: ["planted_partial"])
        try expectRefusedEverywhere("planted_partial", because: "is partial")
    }

    /// An index whose collation no connection has: every INSERT into its table fails with "no such collation
    /// sequence". `CREATE INDEX` refuses an unknown collation, so it is written with `writable_schema`.
    @Test func anIndexWithAnUnknownCollationIsRefused() throws {
        _ = try plantedAsRecordedAddition(
            """
            CREATE INDEX planted_collation ON records (kind COLLATE NOCASE);
            PRAGMA writable_schema = ON;
            UPDATE sqlite_schema SET sql = 'CREATE INDEX planted_collation ON records (kind COLLATE evil)'
                WHERE name = 'planted_collation';
            PRAGMA writable_schema = OFF;
            """, recording: ["planted_collation"])
        try expectRefusedEverywhere("planted_collation", because: "uses the collation evil")
    }

    /// A column added to `records`, with a CHECK that every further INSERT fails or plain: a table of ours whose
    /// definition changed is refused whatever the column (a new column raises both levels or lives in a side table).
    @Test func aConstrainedColumnAddedToRecordsIsRefused() throws {
        _ = try plantedAsRecordedAddition(
            "ALTER TABLE records ADD COLUMN planted INTEGER CHECK (id <= 1)", recording: ["records"])
        try expectRefusedEverywhere("table records", because: "replaces EventQueue's table")
    }

    @Test func aPlainColumnAddedToRecordsIsRefused() throws {
        _ = try plantedAsRecordedAddition("ALTER TABLE records ADD COLUMN origin TEXT", recording: ["records"])
        try expectRefusedEverywhere("table records", because: "replaces EventQueue's table")
    }

    /// A table named like one of ours, recorded: here `records` itself with a table CHECK that every further
    /// INSERT fails, written into its definition with `writable_schema` (no ALTER adds a table constraint).
    @Test func aConstraintWrittenIntoRecordsItselfIsRefused() throws {
        _ = try plantedAsRecordedAddition(
            """
            PRAGMA writable_schema = ON;
            UPDATE sqlite_schema SET sql = replace(sql, ') STRICT', ', CHECK (id <= 1)) STRICT') WHERE name = 'records';
            PRAGMA writable_schema = OFF;
            """, recording: ["records"])
        let raw = try RawDatabase(path: path)
        #expect(
            try raw.scalar("SELECT sql FROM sqlite_schema WHERE name = 'records'")?.contains("CHECK (id <= 1)") == true)
        try expectRefusedEverywhere("table records", because: "replaces EventQueue's table")
    }

    /// An index of EventQueue's replaced under its own name and "recorded": no migration changes an index in place.
    @Test func oneOfOurIndexesReplacedAndRecordedIsRefused() throws {
        _ = try plantedAsRecordedAddition(
            "DROP INDEX delivered_user_keys_age; CREATE INDEX delivered_user_keys_age ON delivered_user_keys (user_key)",
            recording: ["delivered_user_keys_age"])
        try expectRefusedEverywhere("delivered_user_keys_age", because: "replaces EventQueue's index")
    }

    /// What a purely additive next migration adds keeps working for this release's writer, consumer and check: a
    /// plain index on a column (the one scripts/version-matrix's synthetic migration adds), a new table with its
    /// own constraints and any index on it.
    @Test func aPurelyAdditiveMigrationIsStillTolerated() throws {
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("before", user: "u1", key: "k1"))
        writer.close()
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        let sql = """
            CREATE INDEX records_created ON records (created_at_ms);
            CREATE INDEX records_user_created ON records (user_key COLLATE NOCASE, created_at_ms DESC);
            CREATE TABLE outage_limits (
                user_key TEXT NOT NULL PRIMARY KEY CHECK (length(user_key) > 0),
                hits INTEGER NOT NULL DEFAULT 0, doubled INTEGER AS (hits * 2)) STRICT;
            CREATE UNIQUE INDEX outage_limits_hits ON outage_limits (abs(hits)) WHERE hits > 0;
            INSERT INTO schema_levels (version, write_level, read_level, release) VALUES (\(next), \(SchemaContract.writeLevel), \(SchemaContract.readLevel), '9.0.0');
            """
        try Migrations.migrate(
            connection, to: next, using: Migrations.embedded + [Migration(version: next, name: "next", sql: sql)])
        connection.close()
        let again = try QueueWriter(path: path)
        #expect(try again.enqueue(event("before", user: "u1", key: "k1")) == 1, "the retry is still a retry")
        try again.enqueue(event("after", user: "u2", key: "k2"))
        again.close()
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.count == 2)
        #expect(try consumer.ack(claim.records.map(\.id), lease: claim.lease) == 2)
        let report = QueueCheck.run(path: path)
        #expect(report.isHealthy, "\(report.problems)")
        #expect(report.facts.contains { $0.name == "schema" && $0.value == "ok" })
        #expect(report.warnings.contains { $0.contains("additive") })
    }

    /// The next migration itself: one that adds what older binaries refuse must raise both levels, so that they
    /// stop at the levels with the release to upgrade to; with the levels raised it runs.
    @Test func aMigrationThatAddsWhatOlderBinariesRefuseMustRaiseBothLevels() throws {
        let writer = try QueueWriter(path: path)
        writer.close()
        let unique = "CREATE UNIQUE INDEX records_kind ON records (kind);"
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        defer { connection.close() }
        let (write, read) = (SchemaContract.writeLevel, SchemaContract.readLevel)
        for levels in ["\(write), \(read)", "\(write + 1), \(read)", "\(write), \(read + 1)"] {
            let sql = unique + " INSERT INTO schema_levels VALUES (\(next), \(levels), '9.0.0');"
            do {
                try Migrations.migrate(
                    connection, to: next,
                    using: Migrations.embedded + [Migration(version: next, name: "next", sql: sql)])
                Issue.record("a migration with levels \(levels) adding a UNIQUE index on records ran")
            } catch {
                #expect("\(error)".contains("must raise write_level and read_level"), "\(error)")
                #expect("\(error)".contains("index records_kind is UNIQUE"), "\(error)")
            }
            #expect(try connection.scalarInt("PRAGMA user_version", operation: "test") == Int64(next - 1))
        }
        let raised = unique + " INSERT INTO schema_levels VALUES (\(next), \(write + 1), \(read + 1), '9.0.0');"
        try Migrations.migrate(
            connection, to: next, using: Migrations.embedded + [Migration(version: next, name: "next", sql: raised)])
        #expect(try connection.scalarInt("PRAGMA user_version", operation: "test") == Int64(next))
    }
}
