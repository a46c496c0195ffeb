import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Option parsing of both tools under random and extreme values (issue 13, item 9): every run ends with an exit
/// status (0, 64 usage, 75 busy, 78 configuration), never a signal. Runs the debug build `swift test` makes, so
/// the daemon's start paths (including the early failure with a Braze sink, whose HTTP client must be shut down)
/// run with every runtime check on.
@Suite(.serialized) struct OptionFuzzTests {
    static let extremes = [
        "0", "-1", "1", "900", "901", "5000", "86400", "86401", "2147483648", "9223372036854775807",
        "-9223372036854775808", "99999999999999999999", "1e300", "-1e300", "nan", "inf", "-inf", "0.0000001",
        "1.5", "", " ", "0x10", "1_000", "١٢",
    ]

    /// A seeded mix of the extremes and random numbers, so a failure can be replayed.
    static func values(count: Int, seed: UInt64) -> [String] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { index in
            if index < extremes.count { return extremes[index] }
            switch generator.next() % 4 {
            case 0: return String(Int64(bitPattern: generator.next()))
            case 1: return String(Double(bitPattern: generator.next()))
            case 2: return String(generator.next() % 100_000)
            default: return extremes[Int(generator.next() % UInt64(extremes.count))]
            }
        }
    }

    static func expectExit(_ result: ProcessResult, allowed: Set<Int32>, _ what: String) {
        // Foundation's Process reports a signal as its number with terminationReason .uncaughtSignal; a trap is
        // SIGILL (4) or SIGTRAP (5), which are never valid exit statuses of these tools.
        #expect(allowed.contains(result.status), "\(what): exit \(result.status); \(result.stderr.suffix(600))")
        #expect(!result.stderr.contains("Fatal error"), "\(what): \(result.stderr.suffix(600))")
    }

    @Test func queuedNeverCrashesOnAnyNumericOption() async throws {
        let scratch = Scratch()
        let notAQueue = scratch.file("not-a-queue.db")
        _ = FileManager.default.createFile(atPath: notAQueue, contents: Data(repeating: 0x41, count: 4096))
        let options = [
            "--batch-size", "--lease-seconds", "--max-attempts", "--drain-interval", "--shutdown-timeout",
            "--braze-max-objects", "--settle-delay",
        ]
        var runs = 0
        for (index, value) in Self.values(count: 40, seed: 13).enumerated() {
            let option = options[index % options.count]
            // A Braze sink, so the early failure (not a queue: 78) runs with an HTTP client to shut down.
            let arguments = [
                "--db", notAQueue, "--socket", scratch.file("fuzz.sock"), "--sink", "braze:http://127.0.0.1:9",
                option, value,
            ]
            let result = try await run(
                Products.queued, arguments, environment: ["BRAZE_API_KEY": "fuzz-key-1234"], in: scratch)
            Self.expectExit(result, allowed: [64, 78], "queued \(option) \(value)")
            runs += 1
        }
        for (variable, value) in [
            ("EVENTQUEUE_BUSY_TIMEOUT_MS", "9223372036854775807"), ("EVENTQUEUE_BUSY_TIMEOUT_MS", "-1"),
            ("EVENTQUEUE_MIN_FREE_BYTES", "9223372036854775807"), ("WATCHDOG_USEC", "18446744073709551615"),
            ("LISTEN_FDS", "9223372036854775807"),
        ] {
            let result = try await run(
                Products.queued, ["--db", notAQueue, "--socket", scratch.file("fuzz.sock"), "--sink", "null"],
                environment: [variable: value], in: scratch)
            Self.expectExit(result, allowed: [64, 78], "queued with \(variable)=\(value)")
            runs += 1
        }
        print("OptionFuzz queued: \(runs) runs, none crashed")
    }

    @Test func specificCrashesOfIssue13AreUsageErrorsWithTheRange() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        for (option, value) in [
            ("--shutdown-timeout", "1e300"), ("--drain-interval", "1e300"), ("--lease-seconds", "9223372036854775807"),
        ] {
            let result = try await run(
                Products.queued, ["--db", db, "--socket", scratch.file("x.sock"), option, value], in: scratch)
            #expect(result.status == 64, "\(option) \(value): \(result.stderr)")
            #expect(result.stderr.contains("\(option) must be"), "\(result.stderr)")
            #expect(result.stderr.contains(" to "), "the range is in the message: \(result.stderr)")
        }
        let local = try await queuectl(
            ["drain", "--local", "--sink", "null", "--lease-seconds", "9223372036854775807"], db: db, in: scratch)
        #expect(local.status == 64, "\(local.stderr)")
        #expect(local.stderr.contains("--lease-seconds must be 1 to 86400"), "\(local.stderr)")
    }

    /// A usage error of `queued` is one line on stderr, as `queuectl`'s are: no usage summary after it.
    @Test func queuedUsageErrorsAreOneLine() async throws {
        let scratch = Scratch()
        for (arguments, saying) in [
            (["--bogus"], "Unknown option '--bogus'"), (["--batch-size", "abc"], "--batch-size"),
            (["--batch-size", "0"], "--batch-size must be"), (["--db"], "--db"), (["extra"], "extra"),
        ] {
            let result = try await run(
                Products.queued, arguments + ["--socket", scratch.file("x.sock")], in: scratch)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("queued: error: "), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(saying), "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasSuffix("(see `queued --help`)\n"), "\(arguments): \(result.stderr)")
        }
    }

    @Test func aLeaseAbove900IsClampedWithOneNotice() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(3, db: db, in: scratch)
        let result = try await queuectl(
            ["drain", "--local", "--sink", "jsonl:" + scratch.file("out.jsonl"), "--lease-seconds", "5000"], db: db,
            in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        let notices = result.stderr.components(separatedBy: "--lease-seconds 5000 is above the 900 s").count - 1
        #expect(notices == 1, "\(result.stderr)")
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--lease-seconds", "5000"])
        try await withDaemon(daemon) { daemon in
            let log = daemon.log
            #expect(log.components(separatedBy: "--lease-seconds 5000 is above the 900 s").count - 1 == 1, "\(log)")
        }
    }

    @Test func queuectlNeverCrashesOnAnyNumericOption() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(1, db: db, in: scratch)
        var runs = 0
        let drainOptions = ["--batch-size", "--lease-seconds", "--max-attempts", "--busy-timeout"]
        for (index, value) in Self.values(count: 40, seed: 77).enumerated() {
            let option = drainOptions[index % drainOptions.count]
            let result = try await queuectl(
                ["drain", "--local", "--sink", "null", option, value], db: db, in: scratch)
            Self.expectExit(result, allowed: [0, 64], "queuectl drain --local \(option) \(value)")
            runs += 1
        }
        for value in Self.values(count: 24, seed: 5) {
            let peek = try await queuectl(["peek", "--limit", value], db: db, in: scratch)
            Self.expectExit(peek, allowed: [0, 64], "queuectl peek --limit \(value)")
            let dead = try await queuectl(["dead", "list", "--limit", value], db: db, in: scratch)
            Self.expectExit(dead, allowed: [0, 64], "queuectl dead list --limit \(value)")
            runs += 2
        }
        print("OptionFuzz queuectl: \(runs) runs, none crashed")
    }

    /// `enqueue --busy-timeout 9223372036854775807` while another process holds the write lock overflowed in
    /// BusyWait (SIGILL); now it is refused with the range, and a valid timeout ends busy (75).
    @Test func aHugeBusyTimeoutUnderAHeldLockIsRefusedNotATrap() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(1, db: db, in: scratch)
        // Holds the write lock until it is killed (the kernel then drops the lock); says so with a file.
        let ready = scratch.file("locked")
        let holder = try ChildProcess(
            "/usr/bin/python3",
            [
                "-c",
                "import sqlite3,sys,signal\nc=sqlite3.connect(sys.argv[1],isolation_level=None)\n"
                    + "c.execute('BEGIN IMMEDIATE')\nopen(sys.argv[2],'w').close()\nsignal.pause()",
                db, ready,
            ], logDirectory: scratch.path)
        defer { holder.signal(SIGKILL) }
        try await waitFor("the lock holder") { FileManager.default.fileExists(atPath: ready) || holder.hasExited }
        try #require(!holder.hasExited, "the lock holder failed: \(holder.standardError)")
        let event = ["enqueue", "event", "e", "--external-id", "u"]
        let huge = try await queuectl(event + ["--busy-timeout", "9223372036854775807"], db: db, in: scratch)
        #expect(huge.status == 64, "\(huge.stderr)")
        #expect(huge.stderr.contains("--busy-timeout must be 0 to 3600000"), "\(huge.stderr)")
        let short = try await queuectl(event + ["--busy-timeout", "200"], db: db, in: scratch)
        #expect(short.status == 75, "\(short.stderr)")
        let environment = try await queuectl(
            event, db: db, environment: ["EVENTQUEUE_BUSY_TIMEOUT_MS": "9223372036854775807"], in: scratch)
        #expect(environment.status == 64, "\(environment.stderr)")
    }
}
