// Scrub (issue 31, not in the default run: `eventqueue-bench scrub`): what `forget` costs as the queue grows. A
// backlog of N records plus ten of the user to forget; `QueueWriter.forget` removes them, then rebuilds the file
// (`VACUUM`, only when that fits a quarter of the busy timeout: else the scrub is owed) and empties the WAL. A writer thread enqueues one record per transaction
// (FULL) all the while, on its own connection, as an app would: its slowest enqueue during the forget is how long
// the scrub held writers back.
import EventQueue
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Enqueues in a loop on its own thread until stopped; keeps each enqueue's latency and when it started.
final class LatencyWriter: Sendable {
    private let samples = Mutex<[(startedAt: UInt64, nanoseconds: UInt64)]>([])
    private let stopped = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let failure = Mutex<String?>(nil)

    func start(path: String) {
        let thread = Thread { [self] in
            do {
                let writer = try QueueWriter(path: path)
                defer { writer.close() }
                var index = 0
                while !stopped.load(ordering: .relaxed) {
                    let begin = now()
                    try writer.enqueue(makeRecord(10_000_000 + index))
                    let took = now() - begin
                    samples.withLock { $0.append((begin, took)) }
                    index += 1
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            finished.store(true, ordering: .releasing)
        }
        thread.start()
    }

    /// Stops the loop and waits for it; returns the samples, or throws the writer's error.
    func stop() throws -> [(startedAt: UInt64, nanoseconds: UInt64)] {
        stopped.store(true, ordering: .relaxed)
        while !finished.load(ordering: .acquiring) { usleep(1_000) }
        if let message = failure.withLock({ $0 }) { throw BenchError("writer during the scrub: \(message)") }
        return samples.withLock { $0 }
    }
}

func runScrubScenario(_ settings: Settings, _ results: Results) throws {
    let sizes =
        ProcessInfo.processInfo.environment["SCRUB_BACKLOGS"].map { $0.split(separator: ",").compactMap { Int($0) } }
        ?? (settings.quick ? [20_000, 100_000] : [20_000, 100_000, 300_000, 600_000])
    log("== scrub: forget one user (10 records) in a backlog of N, with a writer enqueueing all the while (FULL)")
    log(
        pad("backlog", 10) + pad("db MB", 9) + pad("scrub s", 10) + pad("MB/s", 8) + pad("writer max ms", 15)
            + pad("writer p99 ms", 15) + pad("enqueues during", 16) + "bytes")
    var rows: [[String: Any]] = []
    for size in sizes {
        let path = freshPath(settings, "scrub-\(size)")
        defer { removeDatabase(path) }
        try fillQueue(path: path, count: size)
        do {
            let writer = try QueueWriter(path: path)
            defer { writer.close() }
            for index in 0..<10 {
                try writer.enqueue(
                    Record.attributes(["email": .string("forget-me-\(index)@example.com")], user: .externalID("victim"))
                )
            }
        }
        let databaseBytes = Double(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0)
        let writer = LatencyWriter()
        writer.start(path: path)
        usleep(200_000)  // the writer is in its loop (a benchmark's warm-up, not an ordering)
        let begin = now()
        // SCRUB_FORGET_BUSY_MS=3600000: a bound of 15 minutes, so the VACUUM always runs (as before issue 40 #3).
        let busy = ProcessInfo.processInfo.environment["SCRUB_FORGET_BUSY_MS"].flatMap { Int($0) } ?? 5_000
        let forgetter = try QueueWriter(path: path, options: QueueOptions(busyTimeoutMilliseconds: busy))
        let report = try forgetter.forget([.externalID("victim")])
        forgetter.close()
        let end = now()
        usleep(200_000)
        let samples = try writer.stop()
        guard report.removed == 10 else { throw BenchError("forget: \(report)") }
        // Enqueues that overlapped the forget: started before it ended and ended after it began.
        let during = samples.filter { $0.startedAt < end && $0.startedAt + $0.nanoseconds > begin }
        let latencies = during.map { Double($0.nanoseconds) / 1e6 }
        let scrubSeconds = Double(report.scrub.nanoseconds) / 1e9
        let megabytes = databaseBytes / 1_000_000
        let row: [String: Any] = [
            "backlog": size, "db_bytes": databaseBytes, "scrub_seconds": scrubSeconds,
            "megabytes_per_second": megabytes / scrubSeconds, "writer_max_ms": latencies.max() ?? 0,
            "writer_p99_ms": percentile(latencies, 99), "enqueues_during": during.count,
            "bytes_gone": report.scrub.bytesGone,
        ]
        rows.append(row)
        log(
            pad("\(size)", 10) + pad(format(megabytes, decimals: 1), 9) + pad(format(scrubSeconds, decimals: 3), 10)
                + pad(format(megabytes / scrubSeconds), 8) + pad(format(latencies.max() ?? 0, decimals: 1), 15)
                + pad(format(percentile(latencies, 99), decimals: 1), 15) + pad("\(during.count)", 16)
                + (report.scrub.bytesGone ? "gone" : "owed"))
    }
    results.scenarios["scrub"] = rows
}
