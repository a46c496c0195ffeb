import Foundation
import Testing
import EventQueueTestSupport

/// A damaged queue file (a page overwritten, the file truncated, a foreign file): `check` says so, `queuectl
/// salvage` copies every readable record into a new queue that drains, and a writer either refuses the file
/// without touching it or appends without harming what salvage can read. Writers open in O(1), so they find
/// damage only on the pages they touch; a foreign file they always refuse. The daemon's refusal (it checks the
/// whole file at start) is in queuedTests/DamagedQueueStartTests.
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
            try await checkWriters(kind, db: db, before: before, recovered: nil, in: scratch)
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

        try await checkWriters(kind, db: db, before: before, recovered: recovered, in: scratch)
    }

    /// Writers: a foreign file is always refused; a damaged SQLite file is refused when the write reaches the
    /// damage, and then left exactly as it was. When a write lands elsewhere, what salvage recovers grows by it.
    private func checkWriters(
        _ kind: QueueDamage, db: String, before: FileFingerprint, recovered: Int?, in scratch: Scratch
    ) async throws {
        let single = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        let batch = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: db, stdin: numberedEvents(3, prefix: "late"), in: scratch)
        for attempt in [single, batch] {
            if kind == .foreign { #expect(attempt.status == 78, "\(attempt.stderr)") }
            print("enqueue into a \(kind) file: exit \(attempt.status) \(attempt.stderr)", terminator: "")
            guard attempt.status != 0 else { continue }
            #expect(attempt.status == 78, "\(attempt.stderr)")
            #expect(attempt.stdout.isEmpty)
            #expect(attempt.stderr.split(separator: "\n").count == 1, "\(attempt.stderr)")
            #expect(attempt.stderr.contains(db))
            let says = kind == .foreign ? "not an EventQueue file" : "is corrupt"
            #expect(attempt.stderr.contains(says), "\(attempt.stderr)")
        }
        if single.status != 0 && batch.status != 0 {
            #expect(try FileFingerprint(db) == before)
        } else if let recovered {
            let again = scratch.file("again.db")
            let salvaged = try await run(Products.queuectl, ["salvage", db, again, "--json"], in: scratch)
            #expect(salvaged.status == 0, "\(salvaged.stderr)")
            let second = try #require(
                try JSONSerialization.jsonObject(with: Data(salvaged.stdout.utf8)) as? [String: Any])
            let added = (single.status == 0 ? 1 : 0) + (batch.status == 0 ? 3 : 0)
            #expect(second["recovered"] as? Int == recovered + added, "\(salvaged.stdout)")
        }
    }
}
