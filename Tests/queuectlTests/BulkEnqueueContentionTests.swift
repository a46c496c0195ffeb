import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 22 #4: one `queuectl enqueue --ndjson` of a big file held the write lock for its whole transaction
/// (600,000 records: 12.7-14.6 s), so a single enqueue beside it waited out its busy timeout and exited 75. The
/// bulk input is now committed in chunks of 1,000, and every other writer gets in between two of them.
@Suite(.serialized) struct BulkEnqueueContentionTests {
    static let bulk = 100_000

    /// Single enqueues (with a busy timeout of 1 s, a fifth of the default, to make it sharp) run one after the
    /// other for as long as the bulk enqueue writes: every one exits 0. With the input in one transaction (a few
    /// seconds for 100,000 records), the first of them exits 75.
    @Test func singleEnqueuesDuringABulkEnqueueNeverWaitOutTheirBusyTimeout() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await makeQueue(db, records: 1, in: scratch)
        let input = scratch.file("bulk.ndjson")
        try Data(numberedEvents(Self.bulk, prefix: "bulk").utf8).write(to: URL(fileURLWithPath: input))
        let writer = try ChildProcess(
            Products.queuectl, ["enqueue", "--ndjson", input, "--db", db], logDirectory: scratch.path)
        // Start once the bulk writer writes (its `-wal` grows; the queue was closed without one), not while it
        // checks its input: the same moment whether it commits in chunks or in one transaction.
        let writing = await Wait.value(timeout: .seconds(120), every: .milliseconds(5)) { () -> Bool? in
            if writer.hasExited { return false }
            var info = stat()
            return stat(db + "-wal", &info) == 0 && info.st_size > 256 * 1024 ? true : nil
        }
        #expect(writing == true, "the bulk writer finished before any single enqueue: \(writer.standardError)")
        var (during, failures, slowest) = (0, [String](), Duration.zero)
        while !writer.hasExited {
            let started = ContinuousClock.now
            let single = try await queuectl(
                ["enqueue", "event", "single-\(during)", "--external-id", "solo"], db: db,
                environment: ["EVENTQUEUE_BUSY_TIMEOUT_MS": "1000"], in: scratch)
            slowest = max(slowest, ContinuousClock.now - started)
            if single.status != 0 { failures.append("\(single.status): \(single.stderr)") }
            if !writer.hasExited { during += 1 }
        }
        #expect(await writer.exited() == 0, "\(writer.standardError)")
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(during >= 3, "too few single enqueues ran during the bulk one: \(during)")
        let count = "SELECT count(*) FROM records WHERE payload LIKE '%\"bulk-%'"
        let bulk = Int(try await sqlite3(db, count, in: scratch).first ?? "") ?? -1
        #expect(bulk == Self.bulk)
        print(
            "bulk enqueue of \(Self.bulk): \(during) single enqueues during it, \(failures.count) failed, slowest \(slowest)"
        )
    }
}
