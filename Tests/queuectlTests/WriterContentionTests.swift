import Foundation
import EventQueue
import Testing
import EventQueueTestSupport

/// Writers in a tight loop, the hardest case for SQLite's unqueued locks: eight library writer processes each
/// enqueue one record per transaction (FULL, the default 5 s busy timeout) as fast as they can while another
/// process drains over and over (at a fifth of the default busy timeout, see `busyTimeoutMilliseconds`). No enqueue may fail with SQLITE_BUSY (a writer that keeps losing the race for
/// the lock used to wait out its timeout: see `BusyWait`), and every record arrives once, in per-user order.
@Suite struct WriterContentionTests {
    /// EVENTQUEUE_LONG_TESTS=1 multiplies the record count by 10.
    static let perWriter = TestProfile.isLong ? 10_000 : 1_000
    /// A fifth of the default, to make the test sharp: with SQLite's own handler (sleeps growing to 100 ms)
    /// writers fail within seconds at this timeout; with `BusyWait` the longest wait measured is about a
    /// tenth of it (`eventqueue-bench contention`, max column).
    static let busyTimeoutMilliseconds = 1_000

    @Test func eightLoopingWritersNeverSeeBusyAndLoseNothing() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let out = scratch.file("delivered.jsonl")
        let stop = scratch.file("stop")
        try QueueWriter(path: db).close()  // status and check never create a queue

        let drainer = """
            while [ ! -e "\(stop)" ]; do
              "\(Products.queuectl)" drain --local --sink "jsonl:\(out)" --db "\(db)" >/dev/null
              rc=$?; if [ $rc -ne 0 ] && [ $rc -ne 11 ] && [ $rc -ne 13 ]; then exit $rc; fi
            done
            """
        let drain = Task { try await run("/bin/bash", ["-c", drainer], in: scratch) }
        let logs = (0..<8).map { scratch.file("writer\($0).log") }
        let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for (index, log) in logs.enumerated() {
                group.addTask {
                    try await run(
                        Products.stormWriter,
                        [
                            db, log, "W\(index)", "--users", "5", "--count", "\(Self.perWriter)", "--pause-ms", "0",
                            "--busy-timeout-ms", "\(Self.busyTimeoutMilliseconds)",
                        ],
                        in: scratch)
                }
            }
            var results: [ProcessResult] = []
            for try await result in group { results.append(result) }
            return results
        }
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        let drained = try await drain.value
        #expect(drained.status == 0, "drainer failed: \(drained.stderr)")
        for result in results {
            // The writer reports every failed enqueue on stderr (and goes on): there must be none.
            #expect(result.status == 0 && result.stderr.isEmpty, "writer: \(result.stderr.prefix(500))")
        }
        let final = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(final.status == 0, "final drain: \(final.stderr)")

        let history = try WriterHistory.read(logs: logs)
        #expect(history.confirmed.count == 8 * Self.perWriter)
        let report = HistoryChecker.check(history, delivered: try SinkHistory.jsonl(out))
        #expect(report.lost.isEmpty && report.duplicated.isEmpty && report.reordered.isEmpty, "\(report)")
        #expect(report.delivered == 8 * Self.perWriter)
    }
}
