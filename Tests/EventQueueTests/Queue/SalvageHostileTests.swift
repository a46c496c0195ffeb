import Foundation
import Testing

@testable import EventQueue

/// Issue 16 defect 2: salvage copied poison (an id of 2^63-1 that made every later enqueue fail "disk full",
/// attempts and due times of 2^63-1, a delivered key dated 9e18) and lost count of rows it passed over. Now every
/// copied column is validated, and recovered + invalid + unreadable = seen.
@Suite struct SalvageHostileTests {
    let directory = Scratch()
    var old: String { directory.file("old.db") }
    var new: String { directory.file("new.db") }

    @Test func thirteenHostileRowsAreRenumberedClampedOrCountedInvalid() throws {
        let writer = try QueueWriter(path: old)
        let honest = try writer.enqueue(contentsOf: (0..<3).map { event("ok\($0)", user: "h\($0)") })
        writer.close()
        let raw = try RawDatabase(path: old)
        try raw.execute("PRAGMA ignore_check_constraints = ON")
        let valid = #"'{"external_id":"x","name":"n"}'"#
        let now = WallClock.nowMilliseconds()
        let hostile = [
            // Renumbered (3): ids out of range (the third is the last row).
            "INSERT INTO records (id, kind, payload) VALUES (0, 'event', \(valid))",
            "INSERT INTO records (id, kind, payload) VALUES (-5, 'event', \(valid))",
            // Clamped (3): attempts, due time, dead-letter date.
            "INSERT INTO records (kind, payload, attempts) VALUES ('event', \(valid), 9223372036854775807)",
            "INSERT INTO records (kind, payload, next_attempt_at_ms) VALUES ('event', \(valid), 9223372036854775807)",
            "INSERT INTO records (kind, payload, state, dead_at_ms, last_error) "
                + "VALUES ('event', \(valid), 'dead', 9000000000000000000, 'x')",
            // Invalid (7).
            "INSERT INTO records (kind, payload, created_at_ms) VALUES ('event', \(valid), 9000000000000000000)",
            "INSERT INTO records (kind, payload, created_at_ms) VALUES ('event', \(valid), -1)",
            "INSERT INTO records (kind, payload) VALUES ('event', CAST(X'7B2265787465726E616C5F6964223A2278222C226E616D65223A2261FF227D' AS TEXT))",
            "INSERT INTO records (kind, payload) VALUES ('bogus', \(valid))",
            "INSERT INTO records (kind, payload, state) VALUES ('event', \(valid), 'weird')",
            #"INSERT INTO records (kind, payload) VALUES ('event', '{"external_id":"x","name":""}')"#,
            "INSERT INTO records (kind, payload, idempotency_key) VALUES ('event', \(valid), '\(String(repeating: "k", count: 300))')",
            // Last: after it AUTOINCREMENT can assign no id (what made the salvaged file "disk full").
            "INSERT INTO records (id, kind, payload) VALUES (9223372036854775807, 'event', \(valid))",
        ]
        #expect(hostile.count == 13)
        for sql in hostile { try raw.execute(sql) }
        try raw.execute(
            "INSERT INTO delivered_keys (idempotency_key, record_id, delivered_at_ms) VALUES ('future', 1, 9000000000000000000)"
        )
        try raw.execute("UPDATE sqlite_sequence SET seq = 9223372036854775807 WHERE name = 'records'")

        let report = try QueueSalvage.run(from: old, to: new, now: now, maxAttempts: 10)
        #expect(report.seen == 16)
        #expect(report.recovered + report.invalid + report.unreadable == report.seen, "\(report)")
        #expect(report.recovered == 9 && report.invalid == 7 && report.unreadable == 0, "\(report)")
        #expect(report.renumbered == 3, "\(report)")
        #expect(report.clamped >= 4, "\(report)")
        #expect(report.invalidReasons.count == 7, "\(report.invalidReasons)")

        let copy = try RawDatabase(path: new)
        #expect(try copy.scalar("SELECT count(*) FROM records WHERE id NOT BETWEEN 1 AND 4611686018427387904") == "0")
        #expect(try copy.scalar("SELECT max(attempts) FROM records WHERE state = 'pending'") == "9")
        #expect(
            try copy.scalar(
                "SELECT count(*) FROM records WHERE next_attempt_at_ms > \(ClockHorizon.latestPlausible(after: now))")
                == "0")
        #expect(try copy.scalar("SELECT count(*) FROM records WHERE dead_at_ms > \(now)") == "0")
        #expect(
            try copy.scalar("SELECT delivered_at_ms FROM delivered_keys WHERE idempotency_key = 'future'")
                == String(now))
        #expect(QueueCheck.run(path: new).isHealthy)
        // The honest records keep their ids, and the new file takes new records (no "disk full" from the counter).
        #expect(
            try copy.scalar(
                "SELECT count(*) FROM records WHERE id IN (\(honest.map(String.init).joined(separator: ",")))") == "3")
        let after = try QueueWriter(path: new)
        defer { after.close() }
        #expect(try after.enqueue(event("fresh", user: "f")) > 0)
    }
}
