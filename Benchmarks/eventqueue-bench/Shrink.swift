// Scenario "shrink" (issue 30 #7): does the space come back after a large backlog is delivered? A backlog is
// built (100,000 records with --quick, 1,000,000 otherwise), then drained by the Drainer to the null sink, pass
// after pass a second apart, with its upkeep after each pass as the daemon runs it (`maintainAfterPass`, which
// waits while this release's writers write), while two paced writer processes keep writing (100 records a second
// each: an app in use). After each pass: the file and its -wal on disk, the pages in use (the working size) and
// the free pages not yet returned. docs/PERFORMANCE.md, "Space after a backlog".
import EventQueue
import EventQueueDelivery
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// `child-paced-writer DB INTERVAL_MS`: one enqueue every INTERVAL_MS until the file DB.stop appears; prints the
/// count and the enqueue latencies' p50, p99 and maximum (us): what the upkeep costs writers while it returns space.
func runPacedWriterChild(_ arguments: [String]) -> Never {
    guard arguments.count >= 2, let interval = Double(arguments[1]) else {
        print("usage: child-paced-writer DB INTERVAL_MS")
        exit(64)
    }
    var latencies: [UInt64] = []
    do {
        let writer = try QueueWriter(path: arguments[0], options: QueueOptions(minimumFreeBytes: 0))
        var index = Int(getpid()) * 1_000_000
        while access(arguments[0] + ".stop", F_OK) != 0 {
            let start = now()
            try writer.enqueue(makeRecord(index))
            latencies.append((now() - start) / 1000)
            index += 1
            usleep(UInt32(interval * 1000))
        }
        writer.close()
    } catch {
        print("error \(error)")
        exit(1)
    }
    latencies.sort()
    func percentile(_ p: Double) -> UInt64 {
        latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
    }
    print("\(latencies.count) \(percentile(0.5)) \(percentile(0.99)) \(latencies.last ?? 0)")
    exit(0)
}

func runShrinkScenario(_ settings: Settings, _ results: Results) async throws {
    let backlog = settings.quick ? 100_000 : 1_000_000
    let passes = 4
    log("== shrink: a backlog of \(backlog) delivered while 2 writers write 100 records/s each; sizes after each pass")
    let path = freshPath(settings, "shrink")
    defer { removeDatabase(path) }
    let writer = try QueueWriter(path: path, options: QueueOptions(durability: .normal, minimumFreeBytes: 0))
    for start in stride(from: 0, to: backlog, by: 5_000) {
        try writer.enqueue(contentsOf: (start..<min(start + 5_000, backlog)).map { makeRecord($0) })
    }
    writer.close()
    let store = try QueueStore(path: path)
    var rows: [[String: Any]] = []
    func sample(_ label: String, seconds: Double) async throws {
        let (used, free) = try await store.withConsumer { consumer throws(QueueError) in
            let admin = consumer.admin
            let used = try admin.queueBytes()
            return (used, fileBytes(path) - used)
        }
        let row: [String: Any] = [
            "after": label, "seconds": seconds, "db_bytes": fileBytes(path), "wal_bytes": fileBytes(path + "-wal"),
            "used_bytes": used, "free_bytes": max(0, free),
        ]
        rows.append(row)
        log(
            pad(label, 16) + pad(format(seconds, decimals: 1), 9) + pad(megabytes(fileBytes(path)), 10)
                + pad(megabytes(fileBytes(path + "-wal")), 10) + pad(megabytes(used), 10) + megabytes(max(0, free)))
    }
    log(pad("after", 16) + pad("s", 9) + pad("db MB", 10) + pad("wal MB", 10) + pad("in use MB", 10) + "free MB")
    let started = now()
    try await sample("backlog built", seconds: 0)
    let writers = try (0..<2).map { _ in try spawnChild(Settings.ownPath(), ["child-paced-writer", path, "10"]) }
    defer { unlink(path + ".stop") }
    let drainer = Drainer(store: store, sink: NullSink(), options: DrainOptions(), logger: Logger(label: "shrink"))
    for pass in 1...passes {
        let summary = try await drainer.drain()
        try await sample("pass \(pass) (\(summary.delivered))", seconds: seconds(since: started))
        try await Task.sleep(for: .seconds(1))
    }
    close(open(path + ".stop", O_CREAT | O_WRONLY, 0o600))
    let latencies = writers.map {
        $0.wait().output.split(separator: " ").compactMap { Int(String($0).filter(\.isNumber)) }
    }
    for (index, fields) in latencies.enumerated() where fields.count == 4 {
        log(
            "writer \(index + 1): \(fields[0]) enqueues, latency p50 \(fields[1]) us, p99 \(fields[2]) us, max \(fields[3]) us"
        )
    }
    await store.close()
    results.scenarios["shrink"] = ["backlog": backlog, "rows": rows, "writer_latencies_us": latencies]
}

private func fileBytes(_ path: String) -> Int64 {
    var info = stat()
    return stat(path, &info) == 0 ? Int64(info.st_size) : 0
}

private func megabytes(_ bytes: Int64) -> String {
    format(Double(bytes) / 1_000_000, decimals: 1)
}
