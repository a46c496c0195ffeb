import EventQueueTestSupport
import Foundation
import Testing

@testable import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 32 #1-#3, from outside: what a group member can do to `<queue>-turn`, and what can happen to a writer in
/// line (killed, stopped), each followed by 20 `queuectl enqueue` runs, each a new process. The damage costs at
/// most about a second once in all: after the first run the others are back to their normal time, because the line
/// heals in the file itself or is gone around by everyone, not once per process. Every record a run was told was
/// written is in the file. The bounds check the defects' order of magnitude (a second per run, the line's wait,
/// against the tens of milliseconds of a run), not a margin a busy machine can cross (issue 40 #6: a median of
/// 61.7 ms against a bound of 60.2 ms failed CI).
@Suite(.serialized) struct WriteLineAttackTests {
    let scratch = Scratch()
    var db: String { scratch.file("q.db") }
    var turnPath: String { db + "-turn" }
    var line: WriteLineReport { WriteLineReport.read(queuePath: db) }

    /// Runs `queuectl enqueue` `count` times; returns each run's wall time. Every run must succeed.
    func enqueue(_ count: Int, tag: String) async throws -> [Duration] {
        var times: [Duration] = []
        for index in 0..<count {
            let start = ContinuousClock.now
            let result = try await queuectl(
                ["enqueue", "event", "e", "--prop", "run=\(tag)-\(index)", "--external-id", "u\(index % 4)"],
                db: db, in: scratch)
            times.append(ContinuousClock.now - start)
            try #require(result.status == 0, "\(tag) run \(index): \(result)")
        }
        return times
    }

    static func median(_ times: [Duration]) -> Duration { times.sorted()[times.count / 2] }

    /// Pending records, as `queuectl status --json` says.
    func pending() async throws -> Int64 {
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let object = try JSONValue.parse(status.stdout).objectValue
        return try #require(object?["pending"]?.numberValue?.integerValue, "\(status)")
    }

    /// The baseline, the attack, the 20 runs after it, and the verdict.
    func expectBackToNormal(
        _ attack: String, sourceLocation: SourceLocation = #_sourceLocation, after: () async throws -> Void
    ) async throws {
        _ = try await enqueue(3, tag: "warm")
        let written = try await pending()
        let before = try await enqueue(20, tag: "before")
        try await after()
        let attacked = try await enqueue(20, tag: "after")
        let normal = Self.median(before)
        let rest = Array(attacked.dropFirst())
        print(
            "WriteLineAttack \(attack): normal \(normal), first after \(attacked[0]), then median "
                + "\(Self.median(rest)), longest \(rest.max() ?? .zero); line: \(line.summary)")
        #expect(
            attacked[0] < .seconds(1) + normal * 2 + .milliseconds(500),
            "\(attack): the first run took \(attacked[0]), normally \(normal)", sourceLocation: sourceLocation)
        #expect(
            Self.median(rest) < normal + .milliseconds(500),
            "\(attack): runs 2-20 took \(Self.median(rest)) (median), normally \(normal)",
            sourceLocation: sourceLocation)
        // A run that waits out the line takes a whole second more than a normal one; on a busy machine one run
        // in 19 can take that long by scheduling alone (normal runs took 0.36 s at load 13, the slowest 1.02 s).
        #expect(
            rest.sorted().dropLast().allSatisfy { $0 < normal + .seconds(1) },
            "\(attack): later runs waited out the line: \(rest), normally \(normal)", sourceLocation: sourceLocation)
        #expect(try await pending() == written + 40, "\(attack): a record is missing", sourceLocation: sourceLocation)
    }

    func pwriteTurn<T: BitwiseCopyable>(_ value: T, at offset: off_t) throws {
        let descriptor = open(turnPath, O_RDWR)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let written = withUnsafeBytes(of: value) { pwrite(descriptor, $0.baseAddress, $0.count, offset) }
        try #require(written == MemoryLayout<T>.size)
    }

    /// Finding 1: one 4-byte write moved `serving` 2^30 tickets behind `next`. Before: every enqueue took 1 s.
    @Test func aPoisonedServingCostsOneRunAtMost() async throws {
        try await expectBackToNormal("poisoned serving") {
            let descriptor = open(turnPath, O_RDONLY)
            var next: UInt32 = 0
            #expect(pread(descriptor, &next, 4, 8) == 4)
            close(descriptor)
            try pwriteTurn(next &- (1 << 30), at: 12)
        }
        #expect(line.repairs >= 1)
    }

    /// Finding 1's twin: a library writer stopped while waiting in line is served while stopped. Before: every
    /// other writer paid 1 s per write for as long as it stayed stopped. Now the first pays it once and the
    /// others go around the stopped writer; once it resumes, it writes and the line goes on.
    @Test func aWriterStoppedWhileWaitingIsGoneAroundAfterOneWait() async throws {
        let stopped = Locked<ChildProcess?>(nil)
        try await expectBackToNormal("stopped waiter") {
            let holder = try #require(WriteTurn.open(queuePath: db))
            #expect(holder.take(timeoutNanoseconds: 1_000_000_000))
            let child = try ChildProcess(
                Products.queuectl, ["enqueue", "event", "stopped", "--external-id", "u9", "--db", db],
                logDirectory: scratch.path)
            stopped.withLock { $0 = child }
            try await waitFor("the writer to wait in line", every: .milliseconds(2)) { line.waiting == 1 }
            child.signal(SIGSTOP)
            holder.give()
            #expect(line.heldNanoseconds != nil, "the stopped writer was served: \(line.summary)")
        }
        #expect(line.bypasses >= 19, "\(line.summary)")
        let child = try #require(stopped.withLock { $0 })
        child.signal(SIGCONT)
        #expect(await child.exited() == 0, "the stopped writer's enqueue: \(child.standardError)")
        let handoffs = line.handoffs
        _ = try await enqueue(1, tag: "resumed")
        #expect(line.handoffs > handoffs, "the line is in use again: \(line.summary)")
    }

    /// Finding 2: a writer killed while holding the turn, nobody waiting, the next writer 2 s later. Before: the
    /// line stayed off (and the daemon saw it busy) until the file was deleted.
    @Test func aHolderKilledWithNobodyWaitingIsPassedOverByTheNextWriter() async throws {
        var handoffs: UInt64 = 0
        try await expectBackToNormal("holder killed, nobody waiting") {
            let lock = try await WriteLockHolder(db: db, seconds: 30, in: scratch)
            let victim = try ChildProcess(
                Products.queuectl, ["enqueue", "event", "victim", "--external-id", "u9", "--db", db],
                logDirectory: scratch.path)
            try await waitFor("the victim to hold the turn", every: .milliseconds(2)) { line.heldNanoseconds != nil }
            victim.signal(SIGKILL)
            _ = await victim.exited()
            await lock.release()
            #expect(line.state == .inUse(busy: false), "a dead holder is not busy: \(line.summary)")
            try await Task.sleep(for: .seconds(2))  // the scenario: the next writer arrives 2 s later
            handoffs = line.handoffs
        }
        #expect(line.passedOver >= 1)
        #expect(line.handoffs >= handoffs + 20, "the writers went through the line: \(line.summary)")
    }

    /// Garbage over the whole page: the next writer resets it to an empty line.
    @Test func garbageInThePageIsRepairedByTheNextWriter() async throws {
        try await expectBackToNormal("garbage page") {
            var generator = SplitMix64(seed: 32)
            let bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
            try Data(bytes).write(to: URL(fileURLWithPath: turnPath))
        }
        #expect(line.state == .inUse(busy: false))
        #expect(line.repairs >= 1)
    }

    /// Finding 3, the part that holds: a file truncated once is sized again by the next writer.
    @Test func aTruncatedFileIsSizedAgain() async throws {
        try await expectBackToNormal("truncated once") {
            #expect(truncate(turnPath, 0) == 0)
        }
        var info = stat()
        #expect(stat(turnPath, &info) == 0 && info.st_size == 4096)
    }

    /// Issue 40 #1: a group member truncates the file and holds its flock (read access is enough). Before: the
    /// page repair sized the file under a blocking flock, so every library writer waited for as long as it was held
    /// (a `queuectl enqueue` was still blocked after 10 s). The file is now sized without a lock.
    @Test func aTruncatedFileWhoseFlockIsHeldHoldsNobodyUp() async throws {
        var holder: Int32 = -1
        defer { if holder >= 0 { close(holder) } }
        try await expectBackToNormal("truncated, flock held") {
            holder = open(turnPath, O_RDONLY)
            #expect(holder >= 0 && flock(holder, LOCK_EX) == 0)
            #expect(truncate(turnPath, 0) == 0)
        }
        var info = stat()
        #expect(stat(turnPath, &info) == 0 && info.st_size == 4096)
    }

    /// Finding 3, the part that cannot be made true (docs/RELIABILITY.md): a process that truncates the file while
    /// a writer touches its mapping kills that writer with SIGBUS, as truncating SQLite's own `-shm` does. Each
    /// writer checks the file's size before each use, so only a truncation in the instant between the check and
    /// the access can; every other run succeeds, and whatever a run printed as written is in the file.
    @Test func aTruncationLoopCanKillAWriterOnlyWithSIGBUS() async throws {
        _ = try await enqueue(1, tag: "create")
        let running = Locked(true)
        let path = turnPath
        let truncations = Locked(0)
        let attacker = Thread {  // a tight loop, as an attacker's C program runs it
            let descriptor = open(path, O_RDWR)
            defer { close(descriptor) }
            while running.withLock({ $0 }) {
                ftruncate(descriptor, 0)
                ftruncate(descriptor, 4096)
                truncations.withLock { $0 += 2 }
            }
        }
        attacker.start()
        var succeeded = 0
        var killed: [Int] = []
        var ids: [Int64] = []
        for index in 0..<100 {
            let result = try await queuectl(
                ["enqueue", "event", "e", "--prop", "run=t\(index)", "--external-id", "u1"], db: db, in: scratch)
            if result.status == 0 {
                succeeded += 1
                ids.append(try #require(Int64(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))))
            } else {
                #expect(result.status == SIGBUS, "run \(index) failed otherwise: \(result)")
                killed.append(index)
            }
        }
        running.withLock { $0 = false }
        let admin = try QueueAdmin(path: db)
        defer { admin.close() }
        let records = try admin.peek(limit: 1_000)
        let stored = Set(records.map(\.id))
        #expect(ids.allSatisfy(stored.contains), "a run said it wrote a record that is not in the file")
        // A run killed after its commit wrote a record its caller was not told about.
        let committedThenKilled = killed.filter { index in
            records.contains { $0.payload.contains("\"run\":\"t\(index)\"") }
        }
        print(
            "WriteLineAttack truncation loop: \(truncations.withLock { $0 }) truncations, \(succeeded) of 100 runs "
                + "succeeded, \(killed.count) killed by SIGBUS, \(committedThenKilled.count) of them after their commit"
        )
    }
}
