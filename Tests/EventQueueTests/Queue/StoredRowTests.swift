import Foundation
import Testing

@testable import EventQueue

/// Issue 13 item 7 and issue 16 defect 1: every value a claim reads from a row is input from another user.
/// Rows out of range, or with text that is not UTF-8, are dead-lettered with the reason, never sent or changed.
@Suite struct StoredRowTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    func seed(_ count: Int) throws -> [Int64] {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        return try writer.enqueue(contentsOf: (0..<count).map { event("e\($0)", user: "u\($0)") })
    }

    func deadReason(_ raw: RawDatabase, _ id: Int64) throws -> String? {
        try raw.scalar("SELECT last_error FROM records WHERE id = \(id) AND state = 'dead'")
    }

    /// A foreign writer's `CAST(X'..' AS TEXT)` with a byte that is not UTF-8: dead-lettered at claim with the
    /// reason, its bytes left exactly as they were (never U+FFFD).
    @Test func invalidUTF8FromAForeignWriterIsDeadLetteredUnchanged() throws {
        let ids = try seed(1)
        let raw = try RawDatabase(path: path)
        // {"external_id":"u9","name":"a\xFFb"}
        let hex = Array(#"{"external_id":"u9","name":"a"#.utf8) + [0xFF] + Array(#"b"}"#.utf8)
        let literal = hex.map { String(format: "%02X", $0) }.joined()
        try raw.execute("PRAGMA ignore_check_constraints = ON")
        try raw.execute("INSERT INTO records (kind, payload) VALUES ('event', CAST(X'\(literal)' AS TEXT))")
        let poisoned = try #require(Int64(try raw.scalar("SELECT max(id) FROM records") ?? ""))
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.map(\.id) == ids)
        #expect(try deadReason(raw, poisoned)?.contains("payload is not valid UTF-8") == true)
        #expect(try raw.scalar("SELECT hex(payload) FROM records WHERE id = \(poisoned)") == literal)
    }

    /// attempts = 2^63-1, created_at_ms below 0, an id of 0: each dead-lettered with its reason; the record next
    /// to them is claimed as usual, and nothing traps (stats, peek and dead list read the same rows).
    @Test func outOfRangeValuesAreDeadLetteredWithTheReason() throws {
        let ids = try seed(4)
        let raw = try RawDatabase(path: path)
        try raw.execute("PRAGMA ignore_check_constraints = ON")
        try raw.execute("UPDATE records SET attempts = 9223372036854775807 WHERE id = \(ids[0])")
        try raw.execute("UPDATE records SET created_at_ms = -9223372036854775808 WHERE id = \(ids[1])")
        try raw.execute("UPDATE records SET id = 0 WHERE id = \(ids[2])")
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let stats = try consumer.admin.stats()
        #expect(stats.pending == 4)
        #expect(stats.oldestPendingAgeSeconds.map { $0 > 0 } == true)
        #expect(try consumer.admin.peek(limit: 10).count == 4)
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.map(\.id) == [ids[3]])
        #expect(try deadReason(raw, ids[0])?.contains("attempts 9223372036854775807 is out of range") == true)
        #expect(try deadReason(raw, ids[1])?.contains("created_at_ms -9223372036854775808 is out of range") == true)
        #expect(try deadReason(raw, 0)?.contains("stored id 0 is out of range") == true)
        #expect(try consumer.admin.deadLetters().count == 3)
        #expect(try consumer.ack(claim.records.map(\.id), lease: claim.lease) == 1)
    }

    /// The drain lock's expiry is read from the file too: an expiry at the top of Int64 is reported within the
    /// clock horizon, so a caller scheduling "expiry + 100 ms" cannot overflow.
    @Test func aDrainLockExpiryIsReportedWithinTheHorizon() throws {
        _ = try seed(1)
        let raw = try RawDatabase(path: path)
        try raw.execute(
            "INSERT INTO drain_lock (id, owner, acquired_at_ms, expires_at_ms) "
                + "VALUES (1, '\(QueueConsumer.hostName()):1:x', 0, 9223372036854775807)")
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let now = WallClock.nowMilliseconds()
        let holder = try #require(try consumer.acquireDrainLock(leaseMilliseconds: 1_000, now: now))
        #expect(holder.expiresAtMilliseconds <= ClockHorizon.latestPlausible(after: now))
    }
}
