import Foundation
import Testing
import EventQueueTestSupport

/// A damaged queue file (a page overwritten, the file truncated, a foreign file): `check` says so, writers
/// refuse it without touching it, and `queuectl salvage` copies every readable record into a new queue that
/// drains. The daemon's refusal is in queuedTests/DamagedQueueStartTests.
@Suite struct CorruptionTests {
    static let records = 2000

    @Test(arguments: QueueDamage.allCases)
    func damageIsReportedRefusedAndSalvaged(_ kind: QueueDamage) async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await makeQueue(db, records: Self.records, in: scratch)
        let facts = try await damage(db, kind, records: Self.records, in: scratch)
        let before = try FileFingerprint(db)
        #expect(before.companions.isEmpty)

        // Writers refuse, one line, exit 78, and the file (and its directory) is exactly as it was.
        let single = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        let batch = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: db, stdin: numberedEvents(3, prefix: "late"), in: scratch)
        for refused in [single, batch] {
            #expect(refused.status == 78, "\(refused.stderr)")
            #expect(refused.stdout.isEmpty)
            #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains(db))
            let says = kind == .foreign ? "not an EventQueue file" : "is corrupt"
            #expect(refused.stderr.contains(says), "\(refused.stderr)")
        }
        #expect(try FileFingerprint(db) == before)

        // check reports it.
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 1, "\(check.stdout)")
        switch kind {
        case .foreign: #expect(check.stdout.contains("problem: \(db) is not an SQLite database"))
        case .dataPage: #expect(check.stdout.contains("problem: integrity:"), "\(check.stdout)")
        case .truncated:
            #expect(check.stdout.contains("problem:") && check.stdout.contains("corrupt"), "\(check.stdout)")
        }
        #expect(try FileFingerprint(db).bytes == before.bytes)

        // salvage: every readable record, into a new file that checks clean and drains.
        let new = scratch.file("new.db")
        let salvage = try await run(Products.queuectl, ["salvage", db, new, "--json"], in: scratch)
        #expect(try FileFingerprint(db).bytes == before.bytes)
        if kind == .foreign {
            #expect(salvage.status == 78)
            #expect(
                salvage.stderr.contains("not an EventQueue file") && salvage.stderr.split(separator: "\n").count == 1)
            #expect(!FileManager.default.fileExists(atPath: new))
            return
        }
        #expect(salvage.status == 0, "\(salvage.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(salvage.stdout.utf8)) as? [String: Any])
        let recovered = try #require(report["recovered"] as? Int)
        let unreadable = try #require(report["unreadable"] as? Int)
        let invalid = try #require(report["invalid"] as? Int)
        print("salvage \(kind): \(salvage.stdout)", terminator: "")
        #expect(recovered > 0)
        #expect(report["complete"] as? Bool == false)
        switch kind {
        case .dataPage:
            // Every record is live, so the live index accounts for each one: recovered + lost == original.
            #expect(recovered + unreadable + invalid == Self.records)
            #expect(recovered >= Self.records - facts.recordsOnDamagedPages)
            #expect(unreadable + invalid >= 1)
        case .truncated:
            // Exactly the records on the pages that are left.
            #expect(recovered == Self.records - facts.recordsOnDamagedPages)
            #expect(recovered + unreadable + invalid <= Self.records)
        case .foreign:
            break
        }

        #expect(try await queuectl(["check"], db: new, in: scratch).status == 0)
        let out = scratch.file("delivered.jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: new, in: scratch)
        #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
        let delivered = try DeliveredLine.parse(file: out)
        #expect(delivered.count == recovered)
        // Ids are kept: record "rec-i" was enqueued with id i + 1.
        for line in delivered {
            let name = line.object["name"] as? String ?? ""
            #expect(name == "rec-\(line.id - 1)", "id \(line.id) carries \(name)")
        }
        #expect(Set(delivered.map(\.id)).count == delivered.count)
    }
}
