import Foundation
import Testing

@testable import EventQueue

/// Issue 16 Proof: a seeded mutation loop over rows of a real queue file. Each round writes 30 records, lets a
/// "foreign writer" (checks off) set random columns of a few rows to hostile values, then drains the file with
/// the consumer and salvages what is left. Nothing may trap, no record that was not mutated may be lost or
/// dead-lettered, and salvage's counts must add up. 12 rounds always; EVENTQUEUE_LONG_TESTS=1 runs 500.
@Suite struct QueueFileFuzzTests {
    static let hostileIntegers: [String] = [
        "-9223372036854775808", "-1", "0", "1", "4611686018427387904", "4611686018427387905",
        "9000000000000000000", "9223372036854775807", "253402300800000",
    ]

    static func mutation(_ rng: inout SplitMix64, id: Int64) -> String {
        let value = hostileIntegers.randomElement(using: &rng) ?? "0"
        let now = WallClock.nowMilliseconds()
        let statements = [
            "UPDATE records SET attempts = \(value) WHERE id = \(id)",
            "UPDATE records SET next_attempt_at_ms = \(value) WHERE id = \(id)",
            "UPDATE records SET created_at_ms = \(value) WHERE id = \(id)",
            "UPDATE records SET id = \(value) WHERE id = \(id)",
            "UPDATE records SET state = 'leased', lease_owner = 'x:1:y', lease_expires_at_ms = \(value) WHERE id = \(id)",
            "UPDATE records SET state = 'leased', lease_owner = 'x:1:y', lease_expires_at_ms = \(now + 5_000) "
                + "WHERE id = \(id)",
            "UPDATE records SET kind = 'bogus' WHERE id = \(id)",
            "UPDATE records SET payload = CAST(X'7B2265787465726E616C5F6964223A2278222C226E616D65223A2261FF227D' AS TEXT) "
                + "WHERE id = \(id)",
            "UPDATE records SET idempotency_key = '' WHERE id = \(id)",
            "UPDATE records SET state = 'weird' WHERE id = \(id)",
            "UPDATE records SET state = 'dead', dead_at_ms = \(value), last_error = 'x' WHERE id = \(id)",
            "UPDATE sqlite_sequence SET seq = \(value) WHERE name = 'records'",
            "INSERT OR REPLACE INTO delivered_keys VALUES ('k\(id)', \(value), \(value))",
            // Issue 22 #1: a payload larger than any record can be (300,000 bytes of padding).
            "UPDATE records SET payload = json_set(payload, '$.pad', hex(zeroblob(150000))) WHERE id = \(id)",
        ]
        return statements.randomElement(using: &rng) ?? statements[0]
    }

    @Test func mutatedRowsNeitherCrashNorCostValidRecords() throws {
        let rounds = TestProfile.isLong ? 500 : 12
        var rng = SplitMix64(seed: 16)
        for round in 0..<rounds {
            let directory = Scratch()
            let path = directory.file("q.db")
            let writer = try QueueWriter(path: path, options: QueueOptions(durability: .normal))
            let names = (0..<30).map { "f\(round)-\($0)" }
            let ids = try writer.enqueue(
                contentsOf: names.enumerated().map { index, name in
                    event(name, user: "u\(index % 7)", key: index % 3 == 0 ? "k\(index)" : nil)
                })
            writer.close()
            let raw = try RawDatabase(path: path)
            try raw.execute("PRAGMA ignore_check_constraints = ON")
            var mutated: Set<String> = []
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                let index = Int.random(in: 0..<ids.count, using: &rng)
                let sql = Self.mutation(&rng, id: ids[index])
                if (try? raw.execute(sql)) != nil, sql.contains("records SET") { mutated.insert(names[index]) }
            }

            // Drain: claim and ack until nothing is claimable.
            var delivered: Set<String> = []
            let consumer = try QueueConsumer(path: path)
            for _ in 0..<20 {
                let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
                if claim.records.isEmpty { break }
                for record in claim.records {
                    let object = try JSONValue.parse(record.payload).objectValue
                    if case .string(let name)? = object?["name"] { delivered.insert(name) }
                }
                try consumer.ack(claim.records.map(\.id), lease: claim.lease)
            }
            let dead = try consumer.admin.deadLetters().map(\.payload)
            _ = try consumer.admin.stats()
            _ = try consumer.admin.peek(limit: 100)
            consumer.close()
            for name in names where !mutated.contains(name) {
                #expect(!dead.contains { $0.contains("\"\(name)\"") }, "round \(round): \(name) dead-lettered")
            }

            // Salvage what is left: every valid record not delivered is in the new file.
            let report = try QueueSalvage.run(from: path, to: directory.file("new.db"))
            #expect(report.recovered + report.invalid + report.unreadable == report.seen, "round \(round): \(report)")
            let copy = try RawDatabase(path: directory.file("new.db"))
            let salvaged = try copy.rows("SELECT json_extract(payload, '$.name') FROM records").compactMap {
                $0.first ?? nil
            }
            for name in names where !mutated.contains(name) && !delivered.contains(name) {
                #expect(salvaged.contains(name), "round \(round): \(name) neither delivered nor salvaged")
            }
            #expect(QueueCheck.run(path: directory.file("new.db")).isHealthy, "round \(round)")
        }
    }
}
