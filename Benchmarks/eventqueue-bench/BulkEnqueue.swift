// Scenario "ndjson" (issue 34, the writers): `queuectl enqueue --ndjson` of a whole file against the floor, a raw
// SQLite C-API loop inserting the same payloads 100 per transaction with synchronous=FULL, in the same rounds
// (interleaved, rotated). queuectl runs as a process of its own, as an operator runs it: the ratio includes its
// start, the check pass over the whole file and printing the ids. Also each queuectl's CPU per record (user + system,
// from wait4), which load barely moves. With EVENTQUEUE_BENCH_BEFORE set to the directory of another build's
// binaries, its queuectl runs in the same rounds, so before and after are measured side by side.
import CSQLite
import EventQueue
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The NDJSON line of record `index`: an event with a few properties, users spread over 1,000 ids.
func bulkLine(_ index: Int) -> String {
    #"{"type":"event","external_id":"user-\#(index % 1000)","name":"song_played","#
        + #""properties":{"song":"Song \#(index)","position":\#(index),"shuffle":\#(index % 2 == 0)}}"#
}

/// The floor: the payloads queuectl stores (the line without `type`, `time` filled in), serialized before the clock
/// starts, inserted 100 per transaction through one prepared statement with the library's pragmas (FULL).
func runBulkFloor(lines: [String], path: String) throws -> (perSecond: Double, cpuSeconds: Double) {
    try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0)).close()
    let db = try openRaw(path, durability: .full)
    defer { sqlite3_close_v2(db) }
    let createdAt = WallClock.nowMilliseconds()
    let time = ISO8601.format(unixMilliseconds: createdAt)
    let payloads: [String] = try lines.map { line in
        var object = try Record(jsonLine: line).object
        object["time"] = .string(time)
        return object.serialized
    }
    let insert = try rawPrepare(db, "INSERT INTO records (kind, payload, created_at_ms) VALUES (?1, ?2, ?3)")
    defer { sqlite3_finalize(insert) }
    let transient = eventqueue_sqlite_transient()
    let cpuBefore = threadCPUSeconds()
    let start = now()
    var index = 0
    while index < payloads.count {
        try rawExec(db, "BEGIN IMMEDIATE")
        for payload in payloads[index..<min(index + 100, payloads.count)] {
            sqlite3_bind_text(insert, 1, "event", -1, transient)
            sqlite3_bind_text(insert, 2, payload, -1, transient)
            sqlite3_bind_int64(insert, 3, createdAt)
            guard sqlite3_step(insert) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(insert)
        }
        try rawExec(db, "COMMIT")
        index += 100
    }
    return (Double(payloads.count) / seconds(since: start), threadCPUSeconds() - cpuBefore)
}

/// User + system CPU of the calling thread (`CLOCK_THREAD_CPUTIME_ID`: `RUSAGE_THREAD` is not imported).
func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func runBulkEnqueueScenario(_ settings: Settings, _ results: Results) throws {
    let count = settings.quick ? 20_000 : 100_000
    let rounds = max(settings.rounds, 3)
    let input = "\(settings.directory)/eventqueue-bench-\(getpid())-bulk.ndjson"
    defer { unlink(input) }
    let lines = (0..<count).map(bulkLine)
    guard let file = fopen(input, "w") else { throw BenchError("cannot write \(input)") }
    for line in lines { fputs(line + "\n", file) }
    fclose(file)
    var programs: [(label: String, path: String)] = [("queuectl", settings.binDirectory + "/queuectl")]
    if let before = QueueEnvironmentVariable.value("EVENTQUEUE_BENCH_BEFORE") {
        programs.append(("queuectl (before: \(before))", before + "/queuectl"))
    }
    log(
        "== ndjson: queuectl enqueue --ndjson of \(count) records vs raw C API 100 per transaction, FULL; "
            + "\(rounds) rounds, rotated")
    var floor: [Double] = []
    var floorCPU: [Double] = []
    var rates: [[Double]] = Array(repeating: [], count: programs.count)
    var cpu: [[Double]] = Array(repeating: [], count: programs.count)
    var rss: [[Double]] = Array(repeating: [], count: programs.count)
    for round in 0..<rounds {
        // The floor and each queuectl take turns going first.
        let order = (0...programs.count).map { ($0 + round) % (programs.count + 1) }
        for which in order {
            let path = freshPath(settings, "bulk-\(round)-\(which)")
            defer { removeDatabase(path) }
            if which == programs.count {
                let measured = try runBulkFloor(lines: lines, path: path)
                floor.append(measured.perSecond)
                floorCPU.append(measured.cpuSeconds * 1e6 / Double(count))
                continue
            }
            try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0)).close()
            let result = try runChild(
                programs[which].path, ["enqueue", "--ndjson", input, "--db", path],
                environment: ["EVENTQUEUE_MIN_FREE_BYTES": "0"])
            guard result.status == 0 else { throw BenchError("queuectl exited \(result.status)") }
            rates[which].append(Double(count) / result.wallSeconds)
            cpu[which].append(result.cpuSeconds * 1e6 / Double(count))
        }
    }
    // Peak RSS once more per program through GNU time: a child of this (large) process inherits its high-water mark
    // at exec (see ColdPath.swift), so wait4's figure would be this process's.
    let rssFile = "\(settings.directory)/eventqueue-bench-\(getpid())-bulk-rss.txt"
    defer { unlink(rssFile) }
    for (which, program) in programs.enumerated() {
        let path = freshPath(settings, "bulk-rss-\(which)")
        defer { removeDatabase(path) }
        try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0)).close()
        let measured = try runChild(
            "/usr/bin/time", ["-f", "%M", "-o", rssFile, program.path, "enqueue", "--ndjson", input, "--db", path],
            environment: ["EVENTQUEUE_MIN_FREE_BYTES": "0"])
        let text = (try? String(contentsOfFile: rssFile, encoding: .utf8)) ?? ""
        guard measured.status == 0, let kilobytes = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw BenchError("/usr/bin/time \(program.label): \(text)") }
        rss[which].append(kilobytes / 1024)
    }
    log(pad("program", 46) + pad("rec/s", 10) + pad("ratio", 8) + pad("CPU µs/rec", 12) + "peak RSS MB")
    log(
        pad("raw C API, 100 per transaction", 46) + pad(format(median(floor)), 10) + pad("1", 8)
            + format(median(floorCPU), decimals: 1))
    var rows: [[String: Any]] = []
    for (index, program) in programs.enumerated() {
        let ratio = median(rates[index]) / median(floor)
        rows.append([
            "name": program.label, "per_s": median(rates[index]), "ratio": ratio, "target": 0.45,
            "met": ratio >= 0.45, "cpu_us_per_record": median(cpu[index]), "peak_rss_mb": rss[index].max() ?? 0,
            "rounds": rates[index], "cpu_rounds": cpu[index],
        ])
        log(
            pad(program.label, 46) + pad(format(median(rates[index])), 10) + pad(format(ratio, decimals: 2), 8)
                + pad(format(median(cpu[index]), decimals: 1), 12) + format(rss[index].max() ?? 0, decimals: 1))
    }
    results.scenarios["bulk_enqueue"] = [
        "records": count, "rounds": rounds, "floor_per_s": median(floor), "floor_rounds": floor,
        "floor_cpu_us_per_record": median(floorCPU), "programs": rows,
    ]
}

/// An environment variable of the bench's own (not the queue's settings).
enum QueueEnvironmentVariable {
    static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
