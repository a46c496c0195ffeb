import FakeBraze
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

    /// What one writer slot did: calls that returned success, and kills.
    struct SlotResult: Sendable {
        var name: String
        var log: String
        var confirmedCalls = 0
        var kills = 0
    }

    /// (b) and (c): `queuectl` writers, driven by a small Python loop rather than by this process. Each call is one
    /// `queuectl enqueue` process: one record per call (`single`), or an NDJSON file of 5 to 40 records in one
    /// transaction (`bulk`). With `killProbability` per call the driver SIGKILLs the call: two times in three
    /// after a random delay of up to 1.3 times the typical length of an unkilled call (learned as it goes), so
    /// kills land anywhere before the commit and sometimes after the exit (a no-op); one time in three as soon as
    /// the call printed its ids, between the commit and the exit, so that the record is delivered though its
    /// writer never said ok. (Thousands of spawns from the test process itself would meet a Foundation bug on
    /// Linux: `Process.run()` over-reads `/proc/self/fd` entries and crashes now and then,
    /// swiftlang/swift-corelibs-foundation#5472.)
    static func queuectlWriter(
        _ mode: String, name: String, db: String, scratch: Scratch, until: ContinuousClock.Instant,
        killProbability: Double, pauseMilliseconds: Int
    ) async throws -> SlotResult {
        let script = try installScript("queuectl-writer.py", queuectlWriterSource, in: scratch)
        let log = scratch.file("\(name).log")
        let seconds = max(0, Double((until - ContinuousClock.now) / .milliseconds(1)) / 1000)
        let result = try await run(
            "/usr/bin/python3",
            [
                script, mode, name, db, log, Products.queuectl, "\(users)", "\(seconds)", "\(killProbability)",
                "\(pauseMilliseconds)",
            ], in: scratch)
        guard result.status == 0,
            let summary = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Int]
        else { throw ScratchError(message: "\(name) failed (\(result.status)): \(result.stderr.suffix(2000))") }
        return SlotResult(
            name: name, log: log, confirmedCalls: summary["confirmed_calls"] ?? 0, kills: summary["kills"] ?? 0)
    }

    static let queuectlWriterSource = #"""
        import json, os, random, subprocess, sys, time
        mode, name, db, log, queuectl = sys.argv[1:6]
        users, seconds, probability = int(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
        pause = float(sys.argv[9]) / 1000
        deadline = time.monotonic() + seconds
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        errors = open(log + ".err", "ab")

        def note(line):
            os.write(fd, (line + "\n").encode())

        def single(marker, n):
            user = ["--external-id", "user-%d" % (n % users)]
            if n % 3 == 1:
                return ["enqueue", "attribute", "marker", marker] + user
            if n % 3 == 2:
                return ["enqueue", "purchase", "sku-%d" % (n % 5), "--currency", "EUR", "--price", "2",
                        "--prop", "marker=" + marker] + user
            return ["enqueue", "event", "storm", "--prop", "marker=" + marker] + user

        def line(marker, n):
            user = "user-%d" % (n % users)
            if n % 3 == 1:
                record = {"type": "attribute", "external_id": user, "marker": marker}
            elif n % 3 == 2:
                record = {"type": "purchase", "external_id": user, "product_id": "sku-1", "currency": "EUR",
                          "price": 3, "properties": {"marker": marker}}
            else:
                record = {"type": "event", "external_id": user, "name": "storm", "properties": {"marker": marker}}
            return json.dumps(record) + "\n"

        typical, n, confirmed, kills = 0.2, 0, 0, 0
        ndjson = log + ".ndjson"
        while time.monotonic() < deadline:
            if mode == "single":
                numbers = [n + 1]
            else:
                numbers = list(range(n + 1, n + 1 + random.randint(5, 40)))
            n = numbers[-1]
            markers = ["%s-%d" % (name, i) for i in numbers]
            if mode == "single":
                argv = [queuectl] + single(markers[0], n) + ["--db", db]
            else:
                with open(ndjson, "w") as handle:
                    handle.write("".join(line(m, i) for m, i in zip(markers, numbers)))
                argv = [queuectl, "enqueue", "--ndjson", ndjson, "--db", db]
            note("attempt " + ",".join(markers))
            start = time.monotonic()
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)
            output = b""
            if random.random() < probability:
                if random.randrange(3) == 0:
                    output = child.stdout.read(1)  # returns once it printed (committed), or exited
                else:
                    time.sleep(typical * random.uniform(0, 1.3))  # a random moment to kill at: the point
                child.kill()  # SIGKILL; a no-op once it has exited
            output += child.stdout.read()
            status = child.wait()
            if status == -9:
                kills += 1
            elif output and status == 0:
                typical = 0.8 * typical + 0.2 * (time.monotonic() - start)
            ids = output.decode().split()
            if status == 0 and len(ids) == len(markers):
                note("ok %s %s" % (",".join(markers), ",".join(ids)))
                confirmed += 1
            time.sleep(pause)  # the writer's pace
        print(json.dumps({"confirmed_calls": confirmed, "kills": kills}))
        """#

    /// Writes an embedded script into the scratch directory once; returns its path.
    static func installScript(_ name: String, _ source: String, in scratch: Scratch) throws -> String {
        let path = scratch.file(name)
        if !FileManager.default.fileExists(atPath: path) {
            try source.write(toFile: path, atomically: true, encoding: .utf8)
        }
        return path
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
                // SIGKILLed at the end of a random lifetime, unless it exited before.
                let lifetime = Double.random(in: killAfter)
                let end = min(until, ContinuousClock.now + .milliseconds(Int(lifetime * 1000)))
                let (_, killed) = await child.exited(within: end - ContinuousClock.now)
                if killed { result.kills += 1 }
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
                time.sleep(0.05)  # back off after an error, as a real writer would
            time.sleep(float(pause) / 1000)  # the writer's pace
        """#

    static func foreignWriter(
        name: String, db: String, scratch: Scratch, until: ContinuousClock.Instant, killAfter: ClosedRange<Double>?,
        pauseMilliseconds: Int
    ) async throws -> SlotResult {
        let script = try installScript("foreign-writer.py", foreignWriterSource, in: scratch)
        let stop = scratch.file("stop-writers")
        return try await restartingWriter(name: name, scratch: scratch, until: until, killAfter: killAfter) {
            incarnation, log in
            [
                "/usr/bin/python3", script, db, log, "\(name).\(incarnation)", "\(users)", "\(pauseMilliseconds)",
                stop,
            ]
        }
    }

    /// Judges a run the two ways that must agree: `HistoryChecker` and `scripts/check-history`, over the writers'
    /// logs and what the fake received (saved to `received.ndjson`, and kept as `name` when
    /// `$EVENTQUEUE_KEEP_HISTORY` is set).
    static func judge(_ results: [SlotResult], at server: FakeBrazeServer, as name: String, scratch: Scratch)
        async throws -> (report: HistoryChecker.Report, script: (status: Int32, summary: String, report: [String: Any]))
    {
        let received = scratch.file("received.ndjson")
        try await saveReceived(server.baseURL, to: received, scratch: scratch)
        let logs = results.map(\.log)
        keep(logs + [received], as: name)
        let report = HistoryChecker.check(
            try WriterHistory.read(logs: logs), delivered: try SinkHistory.brazeReceived(received))
        let script = try await runScript(logs: logs, braze: [received], scratch: scratch)
        return (report, script)
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
