import Foundation
import Testing

@testable import EventQueue

/// Issue 22 #6, #7 and the writer side of #1: idempotency keys scoped to the user (Migrations/0006_user_keys.sql),
/// a key reused for a different record refused, remembered keys counted, clamped and pruned, and the payload bound
/// at the INSERT, on files this release creates and on schema-5 files it migrates.
@Suite struct UserKeyTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    /// Claims everything and acks it: what a delivering consumer does.
    func deliverAll(now: Int64 = WallClock.nowMilliseconds()) throws {
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 1000, leaseMilliseconds: 60_000, now: now)
        try consumer.ack(claim.records.map(\.id), lease: claim.lease, now: now)
    }

    func pendingUsers() throws -> [String] {
        try RawDatabase(path: path).rows("SELECT user_key FROM records WHERE state = 'pending' ORDER BY id")
            .map { $0[0] ?? "" }
    }

    /// A schema-5 file (EventQueue 1.1.0's), built from the migrations up to 5 only.
    func schemaFiveFile() throws -> Connection {
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        try connection.execute("PRAGMA journal_mode = WAL", operation: "test")
        try Migrations.migrate(connection, to: 5)
        return connection
    }

    @Test func theSameKeyForAnotherUserIsARecordOfItsOwn() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let first = try writer.enqueue(event("push_opened", user: "u1", key: "push-123"))
        let second = try writer.enqueue(event("push_opened", user: "u2", key: "push-123"))
        #expect(first != second, "u2's record was dropped as u1's duplicate")
        #expect(try pendingUsers() == ["external_id:u1", "external_id:u2"])
        // After delivery too: a third user, and u1's retry.
        try deliverAll()
        let third = try writer.enqueue(event("push_opened", user: "u3", key: "push-123"))
        #expect(third > second)
        #expect(try writer.enqueue(event("push_opened", user: "u1", key: "push-123")) == first)
        #expect(try pendingUsers() == ["external_id:u3"])
    }

    @Test func aKeyReusedForADifferentRecordOfTheSameUserIsRefused() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let first = try writer.enqueue(event("push_opened", user: "u1", key: "push-123"))
        let before = try RawDatabase(path: path).rows("SELECT * FROM records")
        #expect(throws: QueueError.idempotencyKeyReused(key: "push-123", userKey: "external_id:u1", existingID: first))
        {
            try writer.enqueue(event("push_dismissed", user: "u1", key: "push-123"))
        }
        #expect(try RawDatabase(path: path).rows("SELECT * FROM records") == before, "nothing queued was altered")
        let message = QueueError.idempotencyKeyReused(key: "k", userKey: "external_id:u1", existingID: 7).description
        #expect(message.contains("use a new key for a different record"))
        // In a batch: the whole batch is refused.
        #expect(throws: QueueError.self) {
            try writer.enqueue(contentsOf: [
                event("fine", user: "u2"), event("push_dismissed", user: "u1", key: "push-123"),
            ])
        }
        #expect(try RawDatabase(path: path).rows("SELECT * FROM records") == before)
        // After delivery the digest still tells them apart.
        try deliverAll()
        #expect(throws: QueueError.idempotencyKeyReused(key: "push-123", userKey: "external_id:u1", existingID: first))
        {
            try writer.enqueue(event("push_dismissed", user: "u1", key: "push-123"))
        }
    }

    @Test func aRetryOfTheSameRecordIsANoOpBeforeAndAfterDelivery() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        // No explicit time: the writer fills in a later one on the retry, which is still the same record.
        let record = event("checkout", user: "u1", key: "order-9")
        let first = try writer.enqueue(record)
        Thread.sleep(forTimeInterval: 0.005)
        #expect(try writer.enqueue(record) == first)
        try deliverAll()
        #expect(try writer.enqueue(record) == first)
        let batch = try writer.batch { batch in try batch.enqueue(record) }
        #expect(batch == .alreadyKnown(id: first))
        #expect(try pendingUsers().isEmpty)
        let remembered = try RawDatabase(path: path).rows(
            "SELECT user_key, idempotency_key, record_id FROM delivered_user_keys")
        #expect(remembered == [["external_id:u1", "order-9", String(first)]])
    }

    @Test func aSchemaFiveFileIsMigratedWithItsKeysAndOldWritersKeepTheirRule() throws {
        let connection = try schemaFiveFile()
        // What 1.1.0 writers left: a keyed pending record and a delivered key.
        try connection.execute(
            """
            INSERT INTO records (kind, payload, idempotency_key)
                VALUES ('event', '{"external_id":"u1","name":"a"}', 'pending-key');
            INSERT INTO delivered_keys VALUES ('delivered-key', 99, \(WallClock.nowMilliseconds()));
            """, operation: "test")
        connection.close()
        let consumer = try QueueConsumer(path: path)  // the daemon migrates at start
        consumer.close()
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("PRAGMA user_version") == String(Migrations.latestVersion))
        #expect(try raw.scalar("SELECT user_idempotency_key FROM records") == "pending-key")
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        // Old-format rows still deduplicate the same user's retry (no digest: taken for the same record).
        #expect(try writer.enqueue(event("a", user: "u1", key: "pending-key")) == 1)
        #expect(try writer.enqueue(event("b", user: "u7", key: "delivered-key")) == 99, "user unknown: still global")
        // Another user's pending key is not.
        #expect(try writer.enqueue(event("a", user: "u2", key: "pending-key")) > 1)
        // The documented INSERT of 1.1.0 and the C and Python writers still resolves its ON CONFLICT target.
        let oldStyle = """
            INSERT INTO records (kind, payload, idempotency_key) VALUES ('event', '{"external_id":"u3","name":"x"}', 'k3')
            ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            """
        try raw.execute(oldStyle)
        try raw.execute(oldStyle)
        #expect(try raw.scalar("SELECT count(*) FROM records WHERE idempotency_key = 'k3'") == "1")
        // An older writer's record is found by a new writer of the same user (its global key).
        let old = try raw.scalar("SELECT id FROM records WHERE idempotency_key = 'k3'")
        #expect(try writer.enqueue(event("x", user: "u3", key: "k3")) == Int64(old ?? ""))
    }

    @Test func aBinaryOfSchemaFiveToleratesTheMigratedFile() throws {
        let connection = try schemaFiveFile()
        // Migration 6 alone: migration 7 raises the read level, which 1.1.0's consumer refuses (SchemaContractTests).
        try Migrations.migrate(connection, to: 6)
        // What a 1.1.0 binary (schema 5; the same contract code) compares: the whole schema, and the writers' names.
        #expect(try QueueSchema.compare(connection, version: 5).differences == [])
        try QueueSchema.verifyNames(connection, version: 5)
        try SchemaContract.admit(connection, fileVersion: 6, role: .writer)
        try SchemaContract.admit(connection, fileVersion: 6, role: .consumer)
        connection.close()
        #expect(
            try RawDatabase(path: path).rows(
                "SELECT name, version FROM schema_additions WHERE version = 6 ORDER BY name")
                == [
                    ["delivered_user_keys", "6"], ["delivered_user_keys_age", "6"], ["records", "6"],
                    ["records_user_idempotency", "6"],
                ])
    }

    @Test func aWriterNeverMigratesAndKeepsTheGlobalRuleOnASchemaFiveFile() throws {
        let connection = try schemaFiveFile()
        connection.close()
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let first = try writer.enqueue(event("a", user: "u1", key: "k"))
        #expect(try writer.enqueue(event("a", user: "u2", key: "k")) == first, "schema 5's own (global) rule")
        #expect(try RawDatabase(path: path).scalar("PRAGMA user_version") == "5")
    }

    @Test func theInsertRefusesAPayloadOverTheBound() throws {
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        func insert(padding: Int) throws {
            let payload = #"{"external_id":"u1","name":"big","p":""# + String(repeating: "x", count: padding) + #""}"#
            try raw.execute("INSERT INTO records (kind, payload) VALUES ('event', '\(payload)')")
        }
        let overhead = #"{"external_id":"u1","name":"big","p":""}"#.utf8.count
        do {
            try insert(padding: 300 * 1024)
            Issue.record("a 300 KiB payload must be refused")
        } catch {
            #expect("\(error)".contains("payload_at_most_256_kib"), "\(error)")
        }
        try insert(padding: RecordEncoder.maximumPayloadBytes - overhead)
        #expect(throws: (any Error).self) { try insert(padding: RecordEncoder.maximumPayloadBytes - overhead + 1) }
    }

    @Test func aFarFutureDeliveredKeyIsClampedAndExpires() throws {
        let writer = try QueueWriter(path: path)
        writer.close()
        let now = WallClock.nowMilliseconds()
        let raw = try RawDatabase(path: path)
        try raw.execute(
            """
            INSERT INTO delivered_keys VALUES ('planted', 1, 253402300799999);
            INSERT INTO delivered_user_keys VALUES ('external_id:u1', 'planted', 1, NULL, 253402300799999);
            """)
        let check = QueueCheck.run(path: path)
        #expect(check.warnings.contains { $0.contains("2 remembered idempotency key(s) are dated in the future") })
        #expect(check.facts.contains(.init(name: "remembered_keys", value: "2")))
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        try consumer.admin.checkpointAndVacuum(now: now)
        #expect(try raw.scalar("SELECT count(*) FROM delivered_keys WHERE delivered_at_ms = \(now)") == "1")
        #expect(try raw.scalar("SELECT count(*) FROM delivered_user_keys WHERE delivered_at_ms = \(now)") == "1")
        try consumer.admin.checkpointAndVacuum(now: now + QueueAdmin.deliveredKeyRetentionMilliseconds + 1)
        #expect(try raw.scalar("SELECT count(*) FROM delivered_keys") == "0")
        #expect(try raw.scalar("SELECT count(*) FROM delivered_user_keys") == "0")
    }

    @Test func statsCountRememberedKeysAndPruneForgetsThem() throws {
        let writer = try QueueWriter(path: path)
        for index in 0..<10 { try writer.enqueue(event("e", user: "u\(index)", key: "key-\(index)")) }
        writer.close()
        let now = WallClock.nowMilliseconds()
        try deliverAll(now: now - 3_600_000)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        #expect(try consumer.admin.stats().rememberedKeys == 0, "counted only when asked for")
        let stats = try consumer.admin.stats(includingKeys: true)
        #expect(stats.rememberedKeys == 10)
        #expect(stats.rememberedKeyBytes >= 10 * RememberedKeys.rowOverheadBytes)
        let dry = try consumer.admin.pruneKeys(olderThanMilliseconds: 1_800_000, dryRun: true, now: now)
        #expect(dry.keys == 10)
        #expect(try consumer.admin.stats(includingKeys: true).rememberedKeys == 10)
        #expect(try consumer.admin.pruneKeys(olderThanMilliseconds: 7_200_000, now: now).keys == 0)
        #expect(try consumer.admin.pruneKeys(olderThanMilliseconds: 1_800_000, now: now).keys == 10)
        #expect(try consumer.admin.stats(includingKeys: true).rememberedKeys == 0)
    }

    @Test func theDigestIgnoresTheDefaultsTheWriterFillsIn() throws {
        let record = event("e", user: "u1", key: "k")
        let early = try RecordEncoder.encode(record, now: 1_000)
        let late = try RecordEncoder.encode(record, now: 2_000_000)
        #expect(early.payload != late.payload)
        #expect(early.keyScope == late.keyScope)
        #expect(early.keyScope?.userKey == UserIdentity.externalID("u1").orderingKey)
        let other = try RecordEncoder.encode(event("f", user: "u1", key: "k"), now: 1_000)
        #expect(other.keyScope?.digest != early.keyScope?.digest)
    }
}
