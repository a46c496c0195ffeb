// Scenario 6: backlog scale. The same queue file grows to 10k, 100k, 1M (and 10M in the full run) pending
// records; at each size a fresh consumer process (`child-backlog`, the library's QueueStore and Drainer code
// path) claims, prepares and acks batches of 100, timing each claim, and reports its peak RSS. Flat claim
// latency shows the index at work; flat RSS shows nothing proportional to the backlog is held in memory.
import EventQueue
import EventQueueDelivery
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `child-backlog DB BATCHES`: prints `claim_median_us claim_p99_us ack_median_us peak_rss_bytes`.
func runBacklogChild(_ arguments: [String]) async -> Never {
    guard arguments.count >= 2, let batches = Int(arguments[1]) else {
        print("usage: child-backlog DB BATCHES")
        exit(64)
    }
    do {
        let store = try QueueStore(path: arguments[0])
        let sink = NullSink()
        var claims: [Double] = []
        var acks: [Double] = []
        for _ in 0..<batches {
            var start = now()
            let claim = try await store.withConsumer { consumer throws(QueueError) in
                try consumer.claim(limit: 100, leaseMilliseconds: 60_000)
            }
            claims.append(Double(now() - start) / 1000)
            let outgoing = claim.records.compactMap { try? OutgoingRecord.prepare($0).get() }
            let report = await sink.deliver(outgoing)
            let delivered = outgoing.filter { report.outcomes[$0.id] == .delivered }.map(\.id)
            start = now()
            _ = try await store.withConsumer { consumer throws(QueueError) in
                try consumer.ack(delivered, lease: claim.lease)
            }
            acks.append(Double(now() - start) / 1000)
        }
        await store.close()
        print("\(median(claims)) \(percentile(claims, 99)) \(median(acks)) \(peakRSSBytes())")
        exit(0)
    } catch {
        print("error \(error)")
        exit(1)
    }
}

func runBacklogScenario(_ settings: Settings, _ results: Results) throws {
    let sizes = settings.quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000, 10_000_000]
    let batches = 20
    log("== 6. backlog scale: claim latency and consumer RSS by pending records (\(batches) batches of 100)")
    log(
        pad("pending", 12) + pad("claim p50 us", 14) + pad("claim p99 us", 14) + pad("ack p50 us", 12)
            + pad("peak RSS MB", 13) + "file MB")
    let path = freshPath(settings, "backlog")
    defer { removeDatabase(path) }
    var present = 0
    var nextIndex = 0
    var rows: [[String: Any]] = []
    for size in sizes {
        let fillStart = now()
        try fillQueue(path: path, count: size - present, startIndex: nextIndex)
        nextIndex += size - present
        let fillSeconds = seconds(since: fillStart)
        let result = try runChild(Settings.ownPath(), ["child-backlog", path, String(batches)])
        let fields = result.output.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Double($0) }
        guard result.status == 0, fields.count == 4 else { throw BenchError("child-backlog: \(result.output)") }
        present = size - batches * 100
        var info = stat()
        stat(path, &info)
        let fileMB = Double(info.st_size) / 1_048_576
        log(
            pad(String(size), 12) + pad(format(fields[0], decimals: 1), 14) + pad(format(fields[1], decimals: 1), 14)
                + pad(format(fields[2], decimals: 1), 12) + pad(format(fields[3] / 1_048_576, decimals: 1), 13)
                + format(fileMB, decimals: 0))
        rows.append([
            "pending": size, "claim_median_us": fields[0], "claim_p99_us": fields[1], "ack_median_us": fields[2],
            "peak_rss_mb": fields[3] / 1_048_576, "file_mb": fileMB, "fill_seconds": fillSeconds,
        ])
    }
    results.scenarios["backlog"] = rows
}
