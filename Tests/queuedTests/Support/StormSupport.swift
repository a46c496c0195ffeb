import Foundation
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The writers of the chaos tests (WriterStormTests, SoakTests). Each kind logs every call the Jepsen way
/// (`attempt` before, `ok` after; see `WriterHistory`) to its own log file, so that `HistoryChecker` and
/// `scripts/check-history` can judge the run however often writers were killed mid-call.
enum Storm {
    /// Records go to `user-0` ... `user-(users-1)`, shared by every writer, so one user's records come from many
    /// processes at once and per-user order is judged across them.
    static let users = 8

    /// An append-only writer log (one `write(2)` per line, `O_APPEND`), for writers the test itself drives.
    final class Log: @unchecked Sendable {
        let path: String
        private let descriptor: Int32

        init(path: String) throws {
            self.path = path
            descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
            guard descriptor >= 0 else { throw ScratchError(message: "cannot open \(path): errno \(errno)") }
        }

        func append(_ line: String) {
            var text = line + "\n"
            text.withUTF8 { _ = write(descriptor, $0.baseAddress, $0.count) }
        }

        deinit { close(descriptor) }
    }

    /// What one writer slot did: calls that returned success, and kills.
    struct SlotResult: Sendable {
        var name: String
        var log: String
        var confirmedCalls = 0
        var kills = 0
    }

    /// Random SIGKILLs of a writer mid-call, with `probability` per call: two times in three after a random delay
    /// of up to 1.3 times the typical length of an unkilled call (learned as the run goes), so kills land anywhere
    /// before the commit and sometimes after the exit (a no-op); one time in three as soon as it printed its ids,
    /// between the commit and the exit: the record is then delivered though its writer never said ok.
    struct KillPlan: Sendable {
        var probability: Double
        var typicalMilliseconds = 200.0

        init(probability: Double) {
            self.probability = probability
        }

        /// Kills `child` or not; returns whether the kill ended it.
        mutating func run(_ child: ChildProcess) async -> Bool {
            let start = ContinuousClock.now
            if Double.random(in: 0..<1) < probability {
                if Int.random(in: 0..<3) == 0 {
                    // Right after it printed the ids (the commit is done, the writer has not said ok yet).
                    let deadline = ContinuousClock.now + .seconds(30)
                    while ContinuousClock.now < deadline, !child.hasExited, child.standardOutput.isEmpty {
                        try? await Task.sleep(for: .milliseconds(2))
                    }
                } else {
                    let delay = Int(typicalMilliseconds * Double.random(in: 0.0...1.3))
                    try? await Task.sleep(for: .milliseconds(delay))
                }
                child.signal(SIGKILL)
                _ = await child.exited()
                return child.terminatedBySignal
            }
            _ = await child.exited()
            let elapsed = Double((ContinuousClock.now - start) / .milliseconds(1))
            typicalMilliseconds = 0.8 * typicalMilliseconds + 0.2 * elapsed
            return false
        }
    }

    /// The kind of a test-driven record: event, attribute or purchase by its number.
    static func queuectlArguments(marker: String, number: Int) -> [String] {
        let user = ["--external-id", "user-\(number % users)"]
        switch number % 3 {
        case 1: return ["enqueue", "attribute", "marker", marker] + user
        case 2:
            return [
                "enqueue", "purchase", "sku-\(number % 5)", "--currency", "EUR", "--price", "2", "--prop",
                "marker=\(marker)",
            ] + user
        default: return ["enqueue", "event", "storm", "--prop", "marker=\(marker)"] + user
        }
    }

    static func ndjsonLine(marker: String, number: Int) -> String {
        let user = "user-\(number % users)"
        switch number % 3 {
        case 1: return #"{"type":"attribute","external_id":"\#(user)","marker":"\#(marker)"}"#
        case 2:
            return #"{"type":"purchase","external_id":"\#(user)","product_id":"sku-1","currency":"EUR","price":3,"#
                + #""properties":{"marker":"\#(marker)"}}"#
        default:
            return #"{"type":"event","external_id":"\#(user)","name":"storm","properties":{"marker":"\#(marker)"}}"#
        }
    }

    /// (b) One `queuectl enqueue` process per record until `until`, some killed mid-call.
    static func queuectlSingles(
        name: String, db: String, scratch: Scratch, until: ContinuousClock.Instant, kill: KillPlan,
        pauseMilliseconds: Int = 0
    ) async throws -> SlotResult {
        let log = try Log(path: scratch.file("\(name).log"))
        var result = SlotResult(name: name, log: log.path)
        var kill = kill
        var number = 0
        while ContinuousClock.now < until {
            number += 1
            let marker = "\(name)-\(number)"
            log.append("attempt \(marker)")
            let child = try ChildProcess(
                Products.queuectl, queuectlArguments(marker: marker, number: number) + ["--db", db],
                logDirectory: scratch.path)
            if await kill.run(child) { result.kills += 1 }
            let status = await child.exited()
            let id = child.standardOutput.split(separator: "\n").first.flatMap { Int64($0) }
            if status == 0, !child.terminatedBySignal, let id {
                log.append("ok \(marker) \(id)")
                result.confirmedCalls += 1
            }
            child.removeOutput()
            if pauseMilliseconds > 0 { try await Task.sleep(for: .milliseconds(pauseMilliseconds)) }
        }
        return result
    }

    /// (c) `queuectl enqueue --ndjson FILE` with 5 to 40 records per call (one transaction), some killed mid-call.
    static func queuectlBulk(
        name: String, db: String, scratch: Scratch, until: ContinuousClock.Instant, kill: KillPlan,
        pauseMilliseconds: Int = 100
    ) async throws -> SlotResult {
        let log = try Log(path: scratch.file("\(name).log"))
        var result = SlotResult(name: name, log: log.path)
        var kill = kill
        var number = 0
        while ContinuousClock.now < until {
            let numbers = (number + 1)...(number + Int.random(in: 5...40))
            number = numbers.upperBound
            let markers = numbers.map { "\(name)-\($0)" }
            let file = scratch.file("\(name).ndjson")
            let lines = zip(markers, numbers).map { ndjsonLine(marker: $0, number: $1) }
            try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            log.append("attempt " + markers.joined(separator: ","))
            let child = try ChildProcess(
                Products.queuectl, ["enqueue", "--ndjson", file, "--db", db], logDirectory: scratch.path)
            if await kill.run(child) { result.kills += 1 }
            let status = await child.exited()
            let ids = child.standardOutput.split(separator: "\n").compactMap { Int64($0) }
            if status == 0, !child.terminatedBySignal, ids.count == markers.count {
                log.append("ok " + markers.joined(separator: ",") + " " + ids.map(String.init).joined(separator: ","))
                result.confirmedCalls += 1
            }
            child.removeOutput()
            try await Task.sleep(for: .milliseconds(pauseMilliseconds))
        }
        return result
    }

    /// A long-running writer process (the library loop or the foreign SQL writer), restarted after every kill.
    /// `command(incarnation, log)` gives the argv of each run; `killAfter` the random lifetime before the SIGKILL
    /// (`nil`: never killed, stopped by `until` through the writer's `--stop` file instead).
    static func restartingWriter(
        name: String, scratch: Scratch, until: ContinuousClock.Instant, killAfter: ClosedRange<Double>?,
        command: (_ incarnation: Int, _ log: String) throws -> [String]
    ) async throws -> SlotResult {
        let logPath = scratch.file("\(name).log")
        var result = SlotResult(name: name, log: logPath)
        var incarnation = 0
        while ContinuousClock.now < until {
            incarnation += 1
            let argv = try command(incarnation, logPath)
            let child = try ChildProcess(argv[0], Array(argv.dropFirst()), logDirectory: scratch.path)
            if let killAfter {
                let lifetime = Double.random(in: killAfter)
                let end = min(until, ContinuousClock.now + .milliseconds(Int(lifetime * 1000)))
                while ContinuousClock.now < end, !child.hasExited {
                    try await Task.sleep(for: .milliseconds(20))
                }
                if !child.hasExited {
                    child.signal(SIGKILL)
                    result.kills += 1
                }
            }
            let status = await child.exited()
            if status != 0, !child.terminatedBySignal {
                throw ScratchError(message: "\(name) run \(incarnation) failed (\(status)): \(child.standardError)")
            }
            child.removeOutput()
        }
        let history = try WriterHistory.read(logs: [logPath])
        result.confirmedCalls = history.confirmed.count
        return result
    }

    /// (a) The library loop: `eventqueue-storm-writer`, killed and restarted; each run first retries the markers
    /// the previous runs left unconfirmed (same idempotency key, so never a duplicate).
    static func libraryWriter(
        name: String, db: String, scratch: Scratch, until: ContinuousClock.Instant, killAfter: ClosedRange<Double>?,
        batch: Int, pauseMilliseconds: Int
    ) async throws -> SlotResult {
        let stop = scratch.file("stop-writers")
        return try await restartingWriter(name: name, scratch: scratch, until: until, killAfter: killAfter) {
            incarnation, log in
            var argv = [
                Products.stormWriter, db, log, "\(name).\(incarnation)", "--users", "\(users)", "--batch", "\(batch)",
                "--pause-ms", "\(pauseMilliseconds)", "--stop", stop,
            ]
            let unconfirmed = try unconfirmedMarkers(log)
            if !unconfirmed.isEmpty { argv += ["--retry", unconfirmed.joined(separator: ",")] }
            return argv
        }
    }

    /// Re-enqueues, with their idempotency keys, whatever a library writer's log leaves unconfirmed.
    static func retryUnconfirmed(_ result: SlotResult, db: String, scratch: Scratch) async throws {
        let unconfirmed = try unconfirmedMarkers(result.log)
        guard !unconfirmed.isEmpty else { return }
        let child = try ChildProcess(
            Products.stormWriter,
            [db, result.log, "\(result.name).final", "--count", "0", "--retry", unconfirmed.joined(separator: ",")],
            logDirectory: scratch.path)
        let status = await child.exited()
        guard status == 0 else { throw ScratchError(message: "retry failed (\(status)): \(child.standardError)") }
    }

    static func unconfirmedMarkers(_ log: String) throws -> [String] {
        guard FileManager.default.fileExists(atPath: log) else { return [] }
        return try WriterHistory.read(logs: [log]).indeterminate.sorted()
    }

    /// (d) The foreign writer: Python's sqlite3 running the exact INSERT of docs/SCHEMA.md in a loop.
    static let foreignWriterSource = #"""
        import json, os, sqlite3, sys, time
        db, log, prefix, users, pause, stop = sys.argv[1:7]
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        conn = sqlite3.connect(db, timeout=5.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA synchronous = FULL")
        n = 0
        while not os.path.exists(stop):
            n += 1
            marker = "%s-%d" % (prefix, n)
            record = {"external_id": "user-%d" % (n % int(users)), "name": "storm", "properties": {"marker": marker}}
            os.write(fd, ("attempt %s\n" % marker).encode())
            try:
                cursor = conn.execute(
                    "INSERT INTO records (kind, payload, idempotency_key) VALUES (?, ?, ?) "
                    "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
                    ("event", json.dumps(record), None))
                os.write(fd, ("ok %s %d\n" % (marker, cursor.lastrowid)).encode())
            except sqlite3.Error as error:
                sys.stderr.write("%s: %s\n" % (marker, error))
                time.sleep(0.05)
            time.sleep(float(pause) / 1000)
        """#

    static func foreignWriter(
        name: String, db: String, scratch: Scratch, until: ContinuousClock.Instant, killAfter: ClosedRange<Double>?,
        pauseMilliseconds: Int
    ) async throws -> SlotResult {
        let script = scratch.file("foreign-writer.py")
        if !FileManager.default.fileExists(atPath: script) {
            try foreignWriterSource.write(toFile: script, atomically: true, encoding: .utf8)
        }
        let stop = scratch.file("stop-writers")
        return try await restartingWriter(name: name, scratch: scratch, until: until, killAfter: killAfter) {
            incarnation, log in
            [
                "/usr/bin/python3", script, db, log, "\(name).\(incarnation)", "\(users)", "\(pauseMilliseconds)",
                stop,
            ]
        }
    }

    /// The fake's `GET /_received` saved to `path`: the received-log format `scripts/check-history --braze` reads.
    static func saveReceived(_ baseURL: String, to path: String, scratch: Scratch) async throws {
        let result = try await run(
            "/usr/bin/curl", ["-s", "-S", "--fail", "--max-time", "120", "-o", path, baseURL + "/_received"],
            in: scratch)
        guard result.status == 0 else { throw ScratchError(message: "GET /_received failed: \(result.stderr)") }
    }

    /// Copies the history's files (writer logs, sink outputs) to `$EVENTQUEUE_KEEP_HISTORY/<name>/` when that is
    /// set, so a run can be checked again by hand with `scripts/check-history`.
    static func keep(_ paths: [String], as name: String) {
        guard let directory = ProcessInfo.processInfo.environment["EVENTQUEUE_KEEP_HISTORY"] else { return }
        let target = directory + "/" + name
        try? FileManager.default.removeItem(atPath: target)
        try? FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        for path in paths {
            try? FileManager.default.copyItem(
                atPath: path, toPath: target + "/" + URL(fileURLWithPath: path).lastPathComponent)
        }
        print("\(name): history kept in \(target)")
    }

    /// `scripts/check-history` of this repository.
    static var checkHistoryScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/check-history")
            .path
    }

    /// Runs `scripts/check-history --json` on the same files; returns its exit status, summary line and report.
    static func runScript(logs: [String], braze: [String] = [], jsonl: [String] = [], scratch: Scratch) async throws
        -> (status: Int32, summary: String, report: [String: Any])
    {
        var arguments = [checkHistoryScript, "--json"]
        for log in logs { arguments += ["--writer-log", log] }
        for file in braze { arguments += ["--braze", file] }
        for file in jsonl { arguments += ["--jsonl", file] }
        let result = try await run("/usr/bin/python3", arguments, in: scratch)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        guard let summary = lines.first, let last = lines.last,
            let report = try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any]
        else { throw ScratchError(message: "check-history printed no report (\(result.status)): \(result.stderr)") }
        return (result.status, summary, report)
    }
}

/// The daemon's memory and descriptors, from /proc.
enum ProcessFigures {
    /// VmRSS in KiB.
    static func residentKiB(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// The number of open descriptors.
    static func openFiles(_ pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// What the descriptors point at (for a message when they grew).
    static func fileTargets(_ pid: Int32) -> [String] {
        let directory = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0) }
            .sorted()
    }
}

extension ChildProcess {
    var standardOutput: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

    /// Removes the output files (storms start thousands of processes).
    func removeOutput() {
        try? FileManager.default.removeItem(atPath: stdoutPath)
        try? FileManager.default.removeItem(atPath: stderrPath)
    }
}
