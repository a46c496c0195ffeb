import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A full disk, on a 64 MiB tmpfs of the test's own. With the free-space reserve (the default 16 MiB) writers
/// stop first, with exit 74 and "queue disk full", while a drain still has room to run and give the space back.
/// With the reserve off, SQLite itself hits ENOSPC: the write fails cleanly and nothing committed is lost.
/// Mounting needs root: CI runs as root; elsewhere these tests are skipped.
@Suite(.serialized) struct DiskFullTests {
    static let reserve: Int64 = 16 * 1024 * 1024

    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func theReserveStopsEveryWriterAndADrainGivesTheSpaceBack() async throws {
        let count = 20_000
        try await withQueueOnTmpfs(records: count) { tmpfs in
            let (scratch, mount, db) = (tmpfs.scratch, tmpfs.mount, tmpfs.db)
            try mount.fill(leaving: Self.reserve - 2 * 1024 * 1024)
            let freeWhenRefused = mount.freeBytes
            #expect(freeWhenRefused < Self.reserve)
            let before = try await dump(db, in: scratch)
            #expect(before.count == count)

            let refusals = [
                try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch),
                try await queuectl(
                    ["enqueue", "purchase", "p", "--currency", "USD", "--price", "1", "--external-id", "u1"], db: db,
                    in: scratch),
                try await queuectl(
                    ["enqueue", "attribute", "visits", "3", "--external-id", "u1"], db: db, in: scratch),
                try await queuectl(
                    ["enqueue", "--ndjson", "-"], db: db, stdin: numberedEvents(50, prefix: "late"), in: scratch),
            ]
            for refused in refusals {
                #expect(refused.status == 74, "\(refused.stderr)")
                #expect(refused.stdout.isEmpty)
                #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
                #expect(refused.stderr.contains("queue disk full: \(db)"), "\(refused.stderr)")
                #expect(refused.stderr.contains("below the \(Self.reserve)-byte reserve"), "\(refused.stderr)")
            }
            #expect(try await dump(db, in: scratch) == before)

            // The drain writes to another filesystem, deletes every record and returns the pages.
            let out = scratch.file("delivered.jsonl")
            let drain = try await queuectl(
                ["drain", "--local", "--sink", "jsonl:\(out)", "--batch-size", "500"], db: db, in: scratch)
            #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
            let delivered = try DeliveredLine.parse(file: out)
            #expect(delivered.count == count)
            #expect(delivered.map(\.id) == before.map(\.id))
            let freeAfterDrain = mount.freeBytes
            #expect(freeAfterDrain >= Self.reserve, "drain freed only \(freeAfterDrain - freeWhenRefused) bytes")
            let again = try await queuectl(["enqueue", "event", "again", "--external-id", "u1"], db: db, in: scratch)
            #expect(again.status == 0, "\(again.stderr)")
            print(
                "disk full (reserve): refused with \(freeWhenRefused) bytes free; after draining \(count) records: "
                    + "\(freeAfterDrain) bytes free")
        }
    }

    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func withoutTheReserveENOSPCFailsCleanlyAndLosesNothing() async throws {
        let seeded = 2000
        try await withQueueOnTmpfs(records: seeded) { tmpfs in
            let (scratch, mount, db) = (tmpfs.scratch, tmpfs.mount, tmpfs.db)
            let noReserve = ["EVENTQUEUE_MIN_FREE_BYTES": "0"]
            let filler = try mount.fill(leaving: 256 * 1024)

            // Single records until the disk is really full: each one either commits (and prints its id) or fails.
            var accepted: [Int64] = []
            var failure: ProcessResult?
            for index in 0..<2000 {
                let pads = (0..<8).flatMap { ["--prop", "pad\($0)=" + String(repeating: "f", count: 250)] }
                let result = try await queuectl(
                    ["enqueue", "event", "fill-\(index)", "--external-id", "u1"] + pads, db: db, environment: noReserve,
                    in: scratch)
                if result.status != 0 {
                    failure = result
                    break
                }
                accepted.append(try #require(Int64(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))))
            }
            let freeAtFailure = mount.freeBytes
            let batch = try await queuectl(
                ["enqueue", "--ndjson", "-"], db: db, stdin: numberedEvents(5000, prefix: "bulk"),
                environment: noReserve,
                in: scratch)
            for refused in [try #require(failure), batch] {
                #expect(refused.status == 74, "\(refused.stderr)")
                #expect(refused.stdout.isEmpty)
                #expect(refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
                #expect(refused.stderr.contains("queue disk full: \(db)"), "\(refused.stderr)")
            }

            // Free the space: the file is intact and holds exactly what was committed.
            #expect(unlink(filler) == 0)
            let check = try await queuectl(["check"], db: db, in: scratch)
            #expect(check.status == 0, "\(check.stdout)")
            #expect(check.stdout.contains("integrity: ok"))
            let records = try await dump(db, in: scratch)
            #expect(records.count == seeded + accepted.count)
            #expect(Array(records.map(\.id).suffix(accepted.count)) == accepted)
            #expect(
                records.prefix(seeded).enumerated().allSatisfy { $0.element.payload.contains("\"rec-\($0.offset)\"") })
            #expect(!records.contains { $0.payload.contains("\"bulk-") })
            let out = scratch.file("delivered.jsonl")
            let drain = try await queuectl(
                ["drain", "--local", "--sink", "jsonl:\(out)", "--batch-size", "500"], db: db, in: scratch)
            #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
            #expect(try DeliveredLine.parse(file: out).map(\.id) == records.map(\.id))
            print(
                "disk full (no reserve): \(accepted.count) single enqueues committed, then refused with "
                    + "\(freeAtFailure) bytes free: \(failure?.stderr ?? "")", terminator: "")
        }
    }

    struct Row: Equatable {
        var id: Int64
        var payload: String
    }

    /// Every record's id and payload, straight from SQLite.
    func dump(_ db: String, in scratch: Scratch) async throws -> [Row] {
        try await sqlite3(db, "SELECT id, payload FROM records ORDER BY id", in: scratch).map { line in
            let parts = line.split(separator: "|", maxSplits: 1)
            return Row(id: Int64(parts.first ?? "") ?? -1, payload: parts.count == 2 ? String(parts[1]) : "")
        }
    }
}
