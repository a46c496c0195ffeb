import CWriteTurn
import Foundation
import Testing

@testable import EventQueue

/// The writers' line (`WriteTurn`, the `<queue>-turn` file): the turn goes in arrival order, a holder that dies or
/// stalls is not waited for, damage a group member does to the page is repaired by the next writer, and anything
/// else wrong with the file means writing without a line, never an error. Each `WriteTurn` here has its own
/// descriptor, as separate processes do (`WriteTurnProcessTests` and `WriteLineAttackTests` use real ones). Every
/// step waits for the line's own state (`WriteLineReport`), never for a time.
@Suite struct WriteTurnTests {
    let scratch = Scratch()
    var path: String { scratch.file("q.db") }
    var turnPath: String { WriteTurn.path(forQueue: path) }
    var report: WriteLineReport { WriteLineReport.read(queuePath: path) }

    init() throws {
        let path = scratch.file("q.db")
        try QueueWriter(path: path).close()
        // The line's file, as the first writer leaves it: an empty line.
        guard WriteTurn.open(queuePath: path) != nil else { throw ScratchError(message: "no line at \(path)") }
    }

    func line() throws -> Line {
        Line(try #require(WriteTurn.open(queuePath: path)))
    }

    /// Takes the turn on a thread of its own (a futex wait must not hold a cooperative thread); `order` gets
    /// `name` when it has it, and it gives it back once `release` is signalled (at once when nil).
    func takeOnAThread(
        _ line: Line, _ name: String, order: Locked<[String]>, release: DispatchSemaphore? = nil
    ) -> Task<Void, Never> {
        Task {
            await onAThread {
                if line.turn.take(timeoutNanoseconds: 5_000_000_000) {
                    order.withLock { $0.append(name) }
                    release?.wait()
                    line.turn.give()
                } else {
                    order.withLock { $0.append("\(name) did not get it") }
                }
            }
        }
    }

    func waitForWaiting(_ count: Int) async throws {
        try await waitFor("\(count) waiting in line", every: .milliseconds(2)) { report.waiting == count }
    }

    /// What the kernel does to a holder that dies: its descriptor closes, dropping its lock byte, and nothing
    /// hands the turn on. Done through the C API on a descriptor of its own, so the production type needs no hook.
    func aHolderThatDies() throws {
        let descriptor = open(turnPath, O_RDWR)
        try #require(descriptor >= 0)
        var turn = eq_turn(page: nil, descriptor: -1, ticket: 0, held: 0, ops: nil)
        try #require(eq_turn_map(&turn, descriptor) == 0)
        try #require(eq_turn_acquire(&turn, 1_000_000_000, 1_000_000_000) == Int32(EQ_TURN_ACQUIRED))
        munmap(turn.page, Int(EQ_TURN_PAGE_SIZE))
        close(descriptor)
    }

    /// Writes `value` at `offset` of the page, as a group member can.
    func poke<T: BitwiseCopyable>(_ value: T, at offset: Int) {
        let descriptor = open(turnPath, O_RDWR)
        let written = withUnsafeBytes(of: value) { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        #expect(written == MemoryLayout<T>.size)
        close(descriptor)
    }

    func peek<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        let descriptor = open(turnPath, O_RDONLY)
        var value = T.zero
        _ = pread(descriptor, &value, MemoryLayout<T>.size, off_t(offset))
        close(descriptor)
        return value
    }

    @Test func theTurnGoesInArrivalOrder() async throws {
        let (holder, first, second, third) = (try line(), try line(), try line(), try line())
        let handoffs = report.handoffs
        #expect(holder.turn.take(timeoutNanoseconds: 1_000_000_000))
        let order = Locked<[String]>([])
        // Each waiter is in line before the next one asks: the kernel's wake-up order must not decide.
        let a = takeOnAThread(first, "first", order: order)
        try await waitForWaiting(1)
        let b = takeOnAThread(second, "second", order: order)
        try await waitForWaiting(2)
        let c = takeOnAThread(third, "third", order: order)
        try await waitForWaiting(3)
        #expect(order.withLock { $0 }.isEmpty, "nobody may have the turn while it is held")
        holder.turn.give()
        for task in [a, b, c] { await task.value }
        #expect(order.withLock { $0 } == ["first", "second", "third"])
        #expect(report.handoffs == handoffs + 4)
        #expect(report.state == .inUse(busy: false))
    }

    @Test func aHolderThatDiedIsPassedOverQuickly() async throws {
        let next = try line()
        try aHolderThatDies()
        #expect(report.state == .inUse(busy: false), "a dead holder is not writing")
        let start = ContinuousClock.now
        #expect(next.turn.take(timeoutNanoseconds: 5_000_000_000))
        // Two looks at the dead holder's lock byte, a 10 ms slice apart.
        #expect(ContinuousClock.now - start < .milliseconds(500))
        #expect(report.passedOver == 1)
        next.turn.give()
    }

    /// Issue 32 #2: a writer killed holding the turn, nobody waiting. The next writer, arriving after the stale
    /// limit, passes over it before drawing its ticket, and the line works on (it used to stay off for good).
    @Test func aHolderKilledWithNobodyWaitingIsPassedOverByTheNextArrival() async throws {
        let handoffs = report.handoffs
        try aHolderThatDies()
        try await Task.sleep(for: .milliseconds(150))  // the time the successor arrives after: past the stale limit
        let next = try line()
        let start = ContinuousClock.now
        #expect(next.turn.take(timeoutNanoseconds: 2_000_000_000, staleNanoseconds: 100_000_000))
        // Not its timeout (the line stayed off for good before); the exact path is the model test's to check.
        #expect(ContinuousClock.now - start < .milliseconds(500), "no wait for the dead holder")
        next.turn.give()
        #expect(report.passedOver == 1)
        #expect(report.handoffs == handoffs + 1)
        let after = try line()
        #expect(after.turn.take(timeoutNanoseconds: 1_000_000_000))
        after.turn.give()
        #expect(report.handoffs == handoffs + 2, "the line is in use again")
    }

    @Test func aWaiterThatTimesOutLeavesTheLineWithoutHoldingItUp() async throws {
        let (holder, impatient, after) = (try line(), try line(), try line())
        #expect(holder.turn.take(timeoutNanoseconds: 1_000_000_000))
        let start = ContinuousClock.now
        #expect(!impatient.turn.take(timeoutNanoseconds: 200_000_000))
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(200) && waited < .seconds(1), "gave up after \(waited)")
        let order = Locked<[String]>([])
        let done = takeOnAThread(after, "after", order: order)
        try await waitForWaiting(1)
        holder.turn.give()
        let handedOn = ContinuousClock.now
        await done.value
        // The ticket the impatient waiter left is marked: the next one is served at once, not after a liveness check
        // (which would count a pass-over). The time only rules out a wait of the timeout's order.
        #expect(ContinuousClock.now - handedOn < .milliseconds(500))
        #expect(order.withLock { $0 } == ["after"])
        #expect(report.passedOver == 0)
    }

    @Test func aLiveHolderPastTheStaleLimitIsGoneAroundAtOnce() async throws {
        let (stuck, next) = (try line(), try line())
        #expect(stuck.turn.take(timeoutNanoseconds: 1_000_000_000))
        try await Task.sleep(for: .milliseconds(120))  // the holder's time with the turn, past the limit below
        let start = ContinuousClock.now
        #expect(!next.turn.take(timeoutNanoseconds: 2_000_000_000, staleNanoseconds: 100_000_000))
        #expect(ContinuousClock.now - start < .seconds(1), "a stale holder is not waited for (the timeout is 2 s)")
        #expect(report.bypasses == 1)
        stuck.turn.give()
        #expect(next.turn.take(timeoutNanoseconds: 1_000_000_000), "the line works again once it is given back")
        next.turn.give()
    }

    /// Issue 32 #1: one 4-byte write moved `serving` 2^30 tickets back. Each writer used to wait out its timeout,
    /// for months; the first one now passes over the impossible stretch at its second look.
    @Test func aServingMovedFarBackIsRepairedByTheFirstWaiter() throws {
        let next = peek(UInt32.self, at: 8)
        poke(next &- (1 << 30), at: 12)
        let writer = try line()
        let start = ContinuousClock.now
        #expect(writer.turn.take(timeoutNanoseconds: 1_000_000_000))
        #expect(ContinuousClock.now - start < .milliseconds(500))
        writer.turn.give()
        #expect(report.repairs == 1)
        let after = ContinuousClock.now
        #expect(writer.turn.take(timeoutNanoseconds: 1_000_000_000))
        #expect(ContinuousClock.now - after < .milliseconds(500), "healed in the file: the next take waits for nobody")
        writer.turn.give()
        #expect(report.repairs == 1, "repaired once, in the file")
    }

    @Test func aServingMovedAheadOfEveryTicketIsRepairedBeforeDrawing() throws {
        poke(UInt32(1_000_000), at: 12)
        let writer = try line()
        let start = ContinuousClock.now
        #expect(writer.turn.take(timeoutNanoseconds: 2_000_000_000))
        #expect(ContinuousClock.now - start < .seconds(1))
        writer.turn.give()
        #expect(report.repairs == 1)
    }

    @Test func aDamagedPageIsRepairedByTheNextWriter() throws {
        // A group member's (or a lost layout's) bytes over the whole page.
        try Data(repeating: 0xA5, count: 4096).write(to: URL(fileURLWithPath: turnPath))
        guard case .off = report.state else {
            Issue.record("a damaged page is shown as off, got \(report.state)")
            return
        }
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(try writer.enqueue(event("a", user: "u1")) == 1)
        #expect(report.state == .inUse(busy: false))
        #expect(report.repairs == 1)
        #expect(report.handoffs == 1, "the write after the repair went through the line")
    }

    @Test func aPageOfANewerLayoutIsLeftAlone() throws {
        poke(UInt64(0x4551_5455_524e_0009), at: 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: turnPath))
        #expect(WriteTurn.open(queuePath: path) == nil)
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(try writer.enqueue(event("a", user: "u1")) == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: turnPath)) == before)
    }

    /// Issue 32 #3, the part that can be made true: a writer never touches a page the file no longer has. A file
    /// truncated while mapped is sized again by the next take, and the line goes on.
    @Test func aFileTruncatedUnderAMappedLineIsSizedAgain() throws {
        let writer = try line()
        #expect(writer.turn.take(timeoutNanoseconds: 1_000_000_000))
        writer.turn.give()
        #expect(truncate(turnPath, 0) == 0)
        #expect(writer.turn.take(timeoutNanoseconds: 1_000_000_000))
        writer.turn.give()
        var info = stat()
        #expect(stat(turnPath, &info) == 0 && info.st_size == 4096)
        #expect(report.state == .inUse(busy: false))
    }

    @Test func aSymlinkOrAFIFOIsNeverUsed() throws {
        unlink(turnPath)
        let target = scratch.file("victim")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: target))
        #expect(symlink(target, turnPath) == 0)
        #expect(WriteTurn.open(queuePath: path) == nil)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep")
        guard case .off = report.state else {
            Issue.record("a symlink is shown as off, got \(report.state)")
            return
        }
        unlink(turnPath)
        #expect(mkfifo(turnPath, 0o660) == 0)
        #expect(WriteTurn.open(queuePath: path) == nil)
        #expect(report.state == .off(reason: "its -turn file is not a regular file"))
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(try writer.enqueue(event("a", user: "u1")) == 1)
    }

    @Test func theFileGetsTheQueuesModeWhateverTheUmask() throws {
        unlink(turnPath)
        let old = umask(0o077)
        defer { umask(old) }
        _ = try line()
        var info = stat()
        #expect(stat(turnPath, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660)
    }

    @Test func writersOnManyConnectionsAllWriteInLine() async throws {
        let threads = 6
        let perThread = 150
        let failures = Locked<[String]>([])
        let path = self.path
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    await onAThread {
                        do {
                            let writer = try QueueWriter(path: path)
                            defer { writer.close() }
                            for index in 0..<perThread {
                                try writer.enqueue(event("e\(thread)-\(index)", user: "u\(thread)"))
                            }
                        } catch {
                            failures.withLock { $0.append("\(error)") }
                        }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        #expect(try consumer.admin.stats().pending == threads * perThread)
        #expect(report.handoffs >= UInt64(threads * perThread))
    }

    /// Every durable write commits with `synchronous=NORMAL` and syncs the WAL itself after giving the turn and
    /// the lock back; a claim is not synced (the ack after it is).
    @Test func aDurableWriteSyncsTheWALAfterItsCommit() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        try writer.enqueue(event("a", user: "u1"))
        try writer.enqueue(contentsOf: [event("b", user: "u1"), event("c", user: "u2")])
        #expect(writer.file.connection.gate.walSyncs == 2)
        #expect(try writer.file.connection.scalarInt("PRAGMA synchronous", operation: "test") == 1)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 10_000)
        #expect(consumer.file.connection.gate.walSyncs == 0, "a claim is a lease: not synced")
        #expect(try consumer.ack(claim.records.map(\.id), lease: claim.lease) == 3)
        #expect(consumer.file.connection.gate.walSyncs == 1)
    }

    @Test func normalDurabilityNeverSyncsItself() throws {
        let writer = try QueueWriter(path: path, options: QueueOptions(durability: .normal))
        defer { writer.close() }
        try writer.enqueue(event("a", user: "u1"))
        #expect(writer.file.connection.gate.walSyncs == 0)
    }

    @Test func writersCanBeToldToStayOutOfLine() throws {
        unlink(turnPath)
        let writer = try QueueWriter(path: path, options: QueueOptions(waitsInLine: false))
        defer { writer.close() }
        try writer.enqueue(event("a", user: "u1"))
        #expect(access(turnPath, F_OK) != 0, "no line file was made")
        #expect(report.state == .absent)
    }
}

/// A `WriteTurn` handed to the thread that waits with it; one thread uses it at a time.
final class Line: @unchecked Sendable {
    let turn: WriteTurn
    init(_ turn: WriteTurn) { self.turn = turn }
}

/// Runs `body` on a thread of its own and returns its result: for calls that block in the kernel (futex waits,
/// SQLite's busy handler), which must not hold one of the two cooperative threads.
func onAThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
