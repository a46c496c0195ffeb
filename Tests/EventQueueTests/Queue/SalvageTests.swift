import Foundation
import Testing

@testable import EventQueue

/// `QueueSalvage` on a healthy file copies everything exactly (ids, states, times, keys, the id counter), and
/// never changes the old file. The damaged-file cases run through `queuectl salvage` in queuectlTests.
@Suite struct SalvageTests {
    let directory = Scratch()
    var old: String { directory.file("old.db") }
    var new: String { directory.file("new.db") }

    /// 6 records: 1 delivered (its key remembered), 1 leased, 1 dead with its reason, 3 pending (one keyed).
    func makeMixedQueue() throws -> [Int64] {
        let writer = try QueueWriter(path: old)
        let ids = try writer.enqueue(contentsOf: [
            event("delivered", user: "u1", key: "k-delivered"),
            event("leased", user: "u2"),
            event("dead", user: "u3"),
            event("pending-a", user: "u4", key: "k-pending"),
            event("pending-b", user: "u5"),
            Record.attribute("email", .string("ann@example.com"), user: .externalID("u6")),
        ])
        writer.close()
        let consumer = try QueueConsumer(path: old)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 3, leaseMilliseconds: 600_000)
        #expect(claim.records.map(\.id) == Array(ids.prefix(3)))
        #expect(try consumer.ack([ids[0]], lease: claim.lease) == 1)
        #expect(try consumer.reject([ids[2]], lease: claim.lease, reason: "rejected by the sink: bad\nthing") == 1)
        return ids
    }

    @Test func aHealthyFileIsCopiedExactlyAndLeftUntouched() throws {
        let ids = try makeMixedQueue()
        let oldRaw = try RawDatabase(path: old)
        let columns = "id, kind, payload, created_at_ms, idempotency_key, attempts, last_error, dead_at_ms"
        let expected = try oldRaw.rows("SELECT \(columns), state FROM records ORDER BY id")
        let sequence = try oldRaw.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'records'")
        try oldRaw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let before = try Data(contentsOf: URL(fileURLWithPath: old))

        let report = try QueueSalvage.run(from: old, to: new)
        #expect(report.recovered == 5 && report.recoveredPending == 4 && report.recoveredDead == 1)
        #expect(report.unreadable == 0 && report.invalid == 0 && report.damagedRanges.isEmpty)
        #expect(report.deliveredKeys == 1)
        #expect(report.isComplete)
        #expect(try Data(contentsOf: URL(fileURLWithPath: old)) == before)

        let newRaw = try RawDatabase(path: new)
        let copied = try newRaw.rows("SELECT \(columns), state FROM records ORDER BY id")
        #expect(copied.map { Array($0.prefix(8)) } == expected.map { Array($0.prefix(8)) })
        // The leased record is pending again; the dead letter keeps its reason and time.
        #expect(copied.map { $0[8] } == ["pending", "dead", "pending", "pending", "pending"])
        #expect(expected.map { $0[8] } == ["leased", "dead", "pending", "pending", "pending"])
        #expect(try newRaw.scalar("SELECT count(*) FROM records WHERE lease_owner IS NOT NULL") == "0")
        #expect(
            try newRaw.scalar(
                "SELECT record_id FROM delivered_user_keys WHERE idempotency_key = 'k-delivered' "
                    + "AND user_key = 'external_id:u1' AND record_digest IS NOT NULL") == String(ids[0]))
        #expect(
            try newRaw.rows("SELECT user_idempotency_key, record_digest IS NOT NULL FROM records ORDER BY id")
                == oldRaw.rows("SELECT user_idempotency_key, record_digest IS NOT NULL FROM records ORDER BY id"))
        #expect(try newRaw.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'records'") == sequence)
        #expect(try newRaw.scalar("PRAGMA user_version") == String(Migrations.latestVersion))

        // The new file is a working queue: a keyed retry is still a no-op, and new ids continue after the old ones.
        let writer = try QueueWriter(path: new)
        defer { writer.close() }
        // The same records again: the keys and the digests were carried over (issue 22 #6).
        #expect(try writer.enqueue(event("delivered", user: "u1", key: "k-delivered")) == ids[0])
        #expect(try writer.enqueue(event("pending-a", user: "u4", key: "k-pending")) == ids[3])
        #expect(
            throws: QueueError.idempotencyKeyReused(key: "k-pending", userKey: "external_id:u4", existingID: ids[3])
        ) {
            try writer.enqueue(event("other", user: "u4", key: "k-pending"))
        }
        // (A keyed no-op may use up an AUTOINCREMENT value, so "after" rather than "right after".)
        #expect(try writer.enqueue(event("fresh", user: "u7")) > (ids.last ?? 0))
        #expect(QueueCheck.run(path: new).isHealthy)
    }

    @Test func anExistingDestinationIsRefusedAndKept() throws {
        _ = try makeMixedQueue()
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: new))
        #expect(throws: QueueError.self) { try QueueSalvage.run(from: old, to: new) }
        do {
            _ = try QueueSalvage.run(from: old, to: new)
        } catch {
            #expect(error.description.contains("already exists"))
        }
        #expect(try String(contentsOfFile: new, encoding: .utf8) == "keep me")
    }

    @Test func invalidRowsFromAForeignWriterAreCountedNotCopied() throws {
        _ = try makeMixedQueue()
        let raw = try RawDatabase(path: old)
        // Valid JSON, but Braze would refuse it: an empty event name.
        try raw.execute(#"INSERT INTO records (kind, payload) VALUES ('event', '{"external_id":"u9","name":""}')"#)
        let report = try QueueSalvage.run(from: old, to: new)
        #expect(report.recovered == 5)
        #expect(report.invalid == 1)
        #expect(!report.isComplete)
    }

    @Test func aMissingOrForeignSourceCreatesNothing() throws {
        #expect(throws: QueueError.self) { try QueueSalvage.run(from: old, to: new) }
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: old))
        do {
            _ = try QueueSalvage.run(from: old, to: new)
            Issue.record("a foreign file must be refused")
        } catch {
            #expect(error == .notAQueueFile(path: old))
        }
        #expect(!FileManager.default.fileExists(atPath: new))
    }
}

extension SalvageTests {
    /// Committed records still in the `-wal` (not checkpointed: a connection holds the file open) are salvaged
    /// too: the old file is then opened `mode=ro` rather than `immutable=1`, which would not see them.
    @Test func recordsOnlyInTheWALAreSalvaged() throws {
        let writer = try QueueWriter(path: old)
        try writer.enqueue(contentsOf: (0..<50).map { event("e\($0)", user: "u1") })
        writer.close()
        let holder = try RawDatabase(path: old)
        try holder.execute("PRAGMA wal_autocheckpoint = 0")
        try holder.execute(
            #"INSERT INTO records (kind, payload) VALUES ('event', '{"external_id":"u1","name":"in-wal"}')"#)
        var info = stat()
        #expect(stat(old + "-wal", &info) == 0 && info.st_size > 0)
        let report = try QueueSalvage.run(from: old, to: new)
        #expect(report.recovered == 51)
        let copied = try RawDatabase(path: new)
        #expect(try copied.scalar("SELECT count(*) FROM records WHERE payload LIKE '%in-wal%'") == "1")
    }
}
