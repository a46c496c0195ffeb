// Scenario 2: the extension's cold path. A new process each time opens the queue, enqueues one record and
// exits: the minimal writer (links only the library), `queuectl enqueue` as a whole, and as baselines the
// `sqlite3` shell running the documented INSERT with the same pragmas, and `/bin/true` (process start alone).
// With --static-writer, also the minimal writer linked with `-static-stdlib`: what an extension gains by not
// loading the Swift runtime's shared libraries at start.
import EventQueue
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

func runColdPathScenario(_ settings: Settings, _ results: Results) throws {
    let iterations = settings.quick ? 30 : 200
    let path = freshPath(settings, "cold")
    defer { removeDatabase(path) }
    try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0)).close()
    let insert =
        "INSERT INTO records (kind, payload) VALUES ('event', "
        + "'{\"external_id\":\"cold-user\",\"name\":\"cold_start\",\"time\":\"2026-11-23T00:00:00.000Z\"}')"
    var programs: [(name: String, path: String, arguments: [String])] = [
        (
            "eventqueue-minimal-writer", settings.binDirectory + "/eventqueue-minimal-writer",
            [path, "cold_start", "cold-user"]
        ),
        (
            "queuectl enqueue", settings.binDirectory + "/queuectl",
            ["enqueue", "event", "cold_start", "--external-id", "cold-user", "--db", path]
        ),
        (
            "sqlite3 shell (baseline)", "/usr/bin/sqlite3",
            ["-cmd", "PRAGMA busy_timeout = 5000", "-cmd", "PRAGMA synchronous = FULL", path, insert]
        ),
        ("/bin/true (process start)", "/bin/true", []),
    ]
    if let staticWriter = settings.staticWriter {
        programs.insert(
            ("eventqueue-minimal-writer, -static-stdlib", staticWriter, [path, "cold_start", "cold-user"]), at: 1)
    }
    // Issue 34: `queuectl` as the package ships it (-static-stdlib), against the minimal writer built the same way,
    // and the C example writer (one keyed INSERT through libsqlite3; its key is new each run, see `keyedArguments`).
    if let staticQueuectl = settings.staticQueuectl {
        programs.append(
            (
                "queuectl enqueue, -static-stdlib (shipped)", staticQueuectl,
                ["enqueue", "event", "cold_start", "--external-id", "cold-user", "--db", path]
            ))
    }
    if let cWriter = settings.cWriter {
        programs.append(("C-API writer (Examples/c, cc -O2)", cWriter, [path, "cold-user", "cold_start"]))
    }
    let rssFile = "\(settings.directory)/eventqueue-bench-\(getpid())-rss.txt"
    defer { unlink(rssFile) }
    var times: [[Double]] = Array(repeating: [], count: programs.count)
    var rss: [[Double]] = Array(repeating: [], count: programs.count)
    log("== 2. cold path: a new process per record, \(iterations) runs each, interleaved")
    for iteration in 0..<iterations {
        for (index, entry) in programs.enumerated() {
            var program = entry
            // The C writer's record carries an idempotency key: a new one each run, or it would write nothing.
            if program.path == settings.cWriter { program.arguments.append("cold-\(getpid())-\(iteration)") }
            // Wall time: spawned directly. Peak RSS: through GNU time in a second run, because a process spawned
            // from this (large) one inherits its high-water mark at exec (Linux folds the old mm's hiwater into
            // ru_maxrss); GNU time is small and forks its child itself.
            let result = try runChild(program.path, program.arguments)
            guard result.status == 0 else {
                throw BenchError("\(program.name) exited \(result.status): \(result.output)")
            }
            times[index].append(result.wallSeconds * 1000)
            if rss[index].count < 10 {
                let measured = try runChild(
                    "/usr/bin/time",
                    ["-f", "%M", "-o", rssFile, program.path]
                        + program.arguments.map { $0.hasPrefix("cold-\(getpid())") ? $0 + "-rss" : $0 })
                let text = (try? String(contentsOfFile: rssFile, encoding: .utf8)) ?? ""
                guard measured.status == 0, let kilobytes = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
                else { throw BenchError("/usr/bin/time \(program.name): \(text)") }
                rss[index].append(kilobytes / 1024)
            }
        }
    }
    var rows: [[String: Any]] = []
    log(pad("program", 44) + pad("median ms", 11) + pad("p99 ms", 9) + pad("peak RSS MB", 13))
    let baseline = median(times[programs.firstIndex { $0.path == "/usr/bin/sqlite3" } ?? 0])
    for (index, program) in programs.enumerated() {
        let med = median(times[index])
        let p99 = percentile(times[index], 99)
        let peak = rss[index].max() ?? 0
        log(
            pad(program.name, 44) + pad(format(med, decimals: 2), 11) + pad(format(p99, decimals: 2), 9)
                + pad(format(peak, decimals: 1), 13))
        var row: [String: Any] = [
            "name": program.name, "median_ms": med, "p99_ms": p99, "peak_rss_mb": peak,
            "median_rss_mb": median(rss[index]), "runs": iterations,
            "time_ratio_vs_sqlite3_shell": baseline / med,
        ]
        if index == 0 {
            row["rss_target_mb"] = 15.0
            row["met"] = peak < 15.0
        }
        if program.path == settings.staticQueuectl, let staticWriter = settings.staticWriter,
            let minimal = programs.firstIndex(where: { $0.path == staticWriter })
        {
            // Issue 34: the shipped queuectl within 1.5x of the minimal writer built the same way, under 15 MB.
            let ratio = med / median(times[minimal])
            row["time_ratio_vs_minimal_writer"] = ratio
            row["rss_target_mb"] = 15.0
            row["met"] = ratio <= 1.5 && peak < 15.0
            if let cWriter = programs.firstIndex(where: { $0.path == settings.cWriter }) {
                row["time_ratio_vs_c_writer"] = med / median(times[cWriter])
            }
            log(
                "queuectl enqueue (-static-stdlib, as shipped) / minimal writer (-static-stdlib): "
                    + "\(format(ratio, decimals: 2))x (target <= 1.5x), peak RSS \(format(peak, decimals: 1)) MB "
                    + "(target < 15 MB)")
        }
        if program.name == "queuectl enqueue" {
            // Issue 15: a writer's `queuectl enqueue` within 1.5x of the minimal writer and under 15 MB.
            let ratio = med / median(times[0])
            row["time_ratio_vs_minimal_writer"] = ratio
            row["rss_target_mb"] = 15.0
            row["met"] = ratio <= 1.5 && peak < 15.0
            log(
                "queuectl enqueue / minimal writer: \(format(ratio, decimals: 2))x (target <= 1.5x), peak RSS "
                    + "\(format(peak, decimals: 1)) MB (target < 15 MB)")
        }
        rows.append(row)
    }
    results.scenarios["cold_path"] = rows
}
