// Scenario "recovery" (issue 30 #9): what the end of an outage costs. A backlog of 1,000,000 records (100,000 with
// --quick) over 2,000 users, as an outage leaves it, is drained by the Drainer through the real BrazeSink (default
// --max-in-flight, claims of 300) into the project's NIO fake Braze, in process, answering each request after a
// real 50 ms delay (a round trip to Braze) and enforcing a workspace rate limit as Braze does (fixed windows of 3 s,
// 429 beyond the limit). Braze's own limit, 3,000 requests per 3 s (75,000 records a second in full requests), is
// more than one host reaches (section 9: about 25,000 records a second at 50 ms on a quiet machine; 6,400 to 7,000
// here, in process with the fake, at a load average of 9, whatever the limit), so the limit is scaled down to what
// this machine sustains: 300 requests per 3 s by default (a tenth of Braze's; 7,500 records a second),
// EVENTQUEUE_BENCH_WORKSPACE_LIMIT to change it. Passes run back to back, each with the daemon's upkeep after it
// (`maintenanceAfterPass`), until nothing is pending. Prints records/s, the time to drain, the limit-bound time,
// 429s, and the file's size before and after. docs/OPERATING.md "What an outage costs", docs/PERFORMANCE.md
// "Recovery after an outage". Run only when named, like shrink.
import EventQueue
import EventQueueBraze
import EventQueueDelivery
import FakeBraze
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

func runRecoveryScenario(_ settings: Settings, _ results: Results) async throws {
    let backlog = settings.quick ? 100_000 : 1_000_000
    let users = 2_000
    let environment = ProcessInfo.processInfo.environment
    let limit = Int(environment["EVENTQUEUE_BENCH_WORKSPACE_LIMIT"] ?? "") ?? 300
    let delay = Int(environment["EVENTQUEUE_BENCH_DELAY_MS"] ?? "") ?? 50
    let batchSize = 300
    let apiKey = "bench-api-key"
    log(
        "== recovery: a \(backlog)-record backlog (\(users) users) drained through BrazeSink to the NIO fake Braze, "
            + "\(delay) ms per answer, workspace limit \(limit) requests per 3 s (Braze: 3,000)")
    let path = freshPath(settings, "recovery")
    defer { removeDatabase(path) }
    let fillStart = now()
    try fillQueue(path: path, count: backlog, users: users)
    let fillSeconds = seconds(since: fillStart)
    let bytesBefore = diskBytes(path)
    log(
        "  backlog built in \(format(fillSeconds, decimals: 1)) s: file \(format(Double(bytesBefore) / 1e6, decimals: 1)) MB, "
            + "\(format(Double(bytesBefore) / Double(backlog), decimals: 0)) bytes per record")

    var faults = FakeBrazeFaults()
    faults.delayMilliseconds = delay
    faults.workspaceLimit = limit
    faults.workspaceWindowSeconds = 3
    let server = try await FakeBrazeServer.start(apiKey: apiKey, configuration: faults)
    let sink = BrazeSink(baseURL: server.baseURL, apiKey: try BrazeAPIKey(apiKey), logger: quietLogger)
    let store = try QueueStore(path: path)
    let drainer = Drainer(
        store: store, sink: sink, options: DrainOptions(batchSize: batchSize), logger: quietLogger)
    let load = loadAverage()
    let started = now()
    var delivered = 0
    var passes = 0
    var pending = backlog
    while pending > 0, passes < 1_000 {
        let summary = try await drainer.drain()
        delivered += summary.delivered
        passes += 1
        pending = try await store.withConsumer { consumer throws(QueueError) in
            let stats = try consumer.admin.stats()
            return stats.pending + stats.leased
        }
        if pending > 0 { try await Task.sleep(for: .milliseconds(100)) }
    }
    let drainSeconds = seconds(since: started)
    let bytesAfter = diskBytes(path)
    let walAfter = diskBytes(path + "-wal")
    await sink.close()
    await store.close()
    let stats = server.stats()
    try await server.stop()
    guard delivered == backlog, stats.objectsReceived >= backlog else {
        throw BenchError("recovery delivered \(delivered), the fake received \(stats.objectsReceived) of \(backlog)")
    }
    let rate = Double(backlog) / drainSeconds
    let requests = (backlog + 74) / 75
    let limitBound = Double(requests) / Double(limit) * 3
    let rateLimited = stats.byStatus[429] ?? 0
    log(
        "  drained in \(format(drainSeconds, decimals: 1)) s (\(passes) passes): \(format(rate)) rec/s; "
            + "the limit allows \(format(Double(limit) * 75 / 3)) rec/s, \(format(limitBound, decimals: 1)) s for "
            + "\(requests) full requests (\(format(limitBound / drainSeconds * 100, decimals: 0)) % of that)")
    log(
        "  requests \(stats.requests), 429s \(rateLimited), most in flight \(stats.maxInFlight), "
            + "most started in 1 s \(stats.maxRequestsInOneSecond), user overlaps \(stats.userOverlaps)")
    log(
        "  file before \(format(Double(bytesBefore) / 1e6, decimals: 1)) MB, after \(format(Double(bytesAfter) / 1e6, decimals: 2)) MB "
            + "(-wal \(format(Double(walAfter) / 1e6, decimals: 2)) MB); load average at start \(load)")
    results.scenarios["recovery"] = [
        "backlog": backlog, "users": users, "delay_ms": delay, "workspace_limit_per_3s": limit,
        "batch_size": batchSize, "fill_seconds": fillSeconds, "drain_seconds": drainSeconds, "per_s": rate,
        "limit_bound_seconds": limitBound, "passes": passes, "requests": stats.requests, "rate_limited": rateLimited,
        "max_in_flight": stats.maxInFlight, "max_requests_in_one_second": stats.maxRequestsInOneSecond,
        "user_overlaps": stats.userOverlaps, "db_bytes_before": bytesBefore, "db_bytes_after": bytesAfter,
        "wal_bytes_after": walAfter, "load_average": load,
    ]
}

/// The size of `path` on disk (0 when absent).
private func diskBytes(_ path: String) -> Int64 {
    var info = stat()
    return stat(path, &info) == 0 ? Int64(info.st_size) : 0
}

/// `/proc/loadavg`'s first three fields: what else the shared machine was doing.
private func loadAverage() -> String {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}
