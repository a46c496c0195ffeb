import CSQLite
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import EventQueue

/// The writers' line (`WriteTurn`, the `<queue>-turn` file): the turn goes in arrival order, a holder that dies or
/// stalls is not waited for, and anything wrong with the file means writing without a line, never an error.
/// Each `WriteTurn` here has its own descriptor, as separate processes do (`WriteTurnProcessTests` uses real ones).
@Suite struct WriteTurnTests {
    let scratch = Scratch()
    var path: String { scratch.file("q.db") }

    init() throws {
        try QueueWriter(path: scratch.file("q.db")).close()
    }

    func line() throws -> WriteTurn {
        try #require(WriteTurn.open(queuePath: path))
    }

    /// Takes the turn on a thread of its own; `order` gets `name` when it has it, and it holds it `holdFor`.
    func takeOnAThread(
        _ turn: WriteTurn, _ name: String, order: Locked<[String]>, holdFor milliseconds: Int = 0
    ) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let turn = turn
        Thread.detachNewThread {
            if turn.take(timeoutNanoseconds: 5_000_000_000) {
                order.withLock { $0.append(name) }
                usleep(useconds_t(milliseconds * 1000))
                turn.give()
            } else {
                order.withLock { $0.append("\(name) timed out") }
            }
            done.signal()
        }
        return done
    }

    /// Enqueues `name` through `writer` while another line member waits behind it: the turn is held elsewhere
    /// until both are in line, then given back. Returns who finished ("writer returned", "behind").
    func enqueueWithAWriterBehind(_ writer: QueueWriter, _ name: String) throws -> Locked<[String]> {
        let (holder, behind) = (try line(), try line())
        #expect(holder.take(timeoutNanoseconds: 1_000_000_000))
        let order = Locked<[String]>([])
        let enqueued = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let inLine = writer
        Thread.detachNewThread {
            do {
                try inLine.enqueue(event(name, user: "u1"))
                order.withLock { $0.append("writer returned") }
            } catch {
                order.withLock { $0.append("writer failed: \(error)") }
            }
            enqueued.signal()
        }
        usleep(50_000)
        let behindDone = takeOnAThread(behind, "behind", order: order)
        usleep(50_000)
        holder.give()
        enqueued.wait()
        behindDone.wait()
        return order
    }

    @Test func theTurnGoesInArrivalOrder() throws {
        let (holder, first, second, third) = (try line(), try line(), try line(), try line())
        #expect(holder.take(timeoutNanoseconds: 1_000_000_000))
        let order = Locked<[String]>([])
        // Each waiter is in line before the next one asks: the kernel's wake-up order must not decide.
        let a = takeOnAThread(first, "first", order: order, holdFor: 5)
        usleep(50_000)
        let b = takeOnAThread(second, "second", order: order, holdFor: 5)
        usleep(50_000)
        let c = takeOnAThread(third, "third", order: order)
        usleep(50_000)
        #expect(order.withLock { $0 }.isEmpty, "nobody may have the turn while it is held")
        holder.give()
        for done in [a, b, c] { done.wait() }
        #expect(order.withLock { $0 } == ["first", "second", "third"])
        #expect(holder.handoffs == 4)
    }

    @Test func aHolderThatDiedIsPassedOverQuickly() throws {
        let (dying, next) = (try line(), try line())
        #expect(dying.take(timeoutNanoseconds: 1_000_000_000))
        dying.dieHoldingTheTurnForTesting()
        let start = ContinuousClock.now
        #expect(next.take(timeoutNanoseconds: 5_000_000_000))
        let waited = ContinuousClock.now - start
        // Two looks at the dead holder's lock byte, a 10 ms slice apart.
        #expect(waited < .milliseconds(500), "waited \(waited) for a dead holder")
        #expect(next.passedOver == 1)
        next.give()
    }

    @Test func aWaiterThatTimesOutLeavesTheLineWithoutHoldingItUp() throws {
        let (holder, impatient, after) = (try line(), try line(), try line())
        #expect(holder.take(timeoutNanoseconds: 1_000_000_000))
        let start = ContinuousClock.now
        #expect(!impatient.take(timeoutNanoseconds: 200_000_000))
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(200) && waited < .seconds(1), "gave up after \(waited)")
        let order = Locked<[String]>([])
        let done = takeOnAThread(after, "after", order: order)
        usleep(20_000)
        holder.give()
        let handedOn = ContinuousClock.now
        done.wait()
        // The ticket the impatient waiter left is marked: the next one is served at once, not after a liveness check.
        #expect(ContinuousClock.now - handedOn < .milliseconds(8))
        #expect(order.withLock { $0 } == ["after"])
        #expect(holder.passedOver == 0)
    }

    @Test func aHolderOlderThanTheStaleLimitIsNotWaitedFor() throws {
        let (stuck, next) = (try line(), try line())
        #expect(stuck.take(timeoutNanoseconds: 1_000_000_000))
        usleep(120_000)
        let start = ContinuousClock.now
        #expect(!next.take(timeoutNanoseconds: 2_000_000_000, staleNanoseconds: 100_000_000))
        #expect(ContinuousClock.now - start < .milliseconds(50), "a stale holder is not waited for at all")
        stuck.give()
        #expect(next.take(timeoutNanoseconds: 1_000_000_000), "the line works again once it is given back")
        next.give()
    }

    @Test func aDamagedPageMeansWritingWithoutALine() throws {
        let turnPath = WriteTurn.path(forQueue: path)
        // Another layout's (or a group member's) bytes where the page's magic is.
        try Data(repeating: 0xA5, count: 4096).write(to: URL(fileURLWithPath: turnPath))
        #expect(WriteTurn.open(queuePath: path) == nil)
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(try writer.enqueue(event("a", user: "u1")) == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: turnPath)) == Data(repeating: 0xA5, count: 4096))
    }

    @Test func aLineMovedFarAheadIsLeftAtOnce() throws {
        let turn = try line()
        // A group member's write: `serving` (offset 12) far beyond the next ticket (offset 8).
        let descriptor = open(WriteTurn.path(forQueue: path), O_RDWR)
        var ahead: UInt32 = 1_000_000
        #expect(pwrite(descriptor, &ahead, 4, 12) == 4)
        close(descriptor)
        let start = ContinuousClock.now
        #expect(!turn.take(timeoutNanoseconds: 2_000_000_000))
        #expect(ContinuousClock.now - start < .milliseconds(50))
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(try writer.enqueue(event("a", user: "u1")) == 1)
    }

    @Test func aSymlinkOrAFIFOIsNeverUsed() throws {
        let turnPath = WriteTurn.path(forQueue: path)
        let target = scratch.file("victim")
        try Data("keep".utf8).write(to: URL(fileURLWithPath: target))
        #expect(symlink(target, turnPath) == 0)
        #expect(WriteTurn.open(queuePath: path) == nil)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep")
        unlink(turnPath)
        #expect(mkfifo(turnPath, 0o660) == 0)
        #expect(WriteTurn.open(queuePath: path) == nil)
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(try writer.enqueue(event("a", user: "u1")) == 1)
    }

    @Test func theFileGetsTheQueuesModeWhateverTheUmask() throws {
        let old = umask(0o077)
        defer { umask(old) }
        _ = try line()
        var info = stat()
        #expect(stat(WriteTurn.path(forQueue: path), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660)
    }

    @Test func writersOnManyConnectionsAllWriteInLine() throws {
        let threads = 6
        let perThread = 150
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        let path = self.path
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let writer = try QueueWriter(path: path)
                    defer { writer.close() }
                    for index in 0..<perThread { try writer.enqueue(event("e\(thread)-\(index)", user: "u\(thread)")) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        #expect(try consumer.admin.stats().pending == threads * perThread)
        #expect(try line().handoffs >= UInt64(threads * perThread))
    }

    /// With a writer waiting behind it, the holder commits without the in-lock fsync and syncs the WAL itself
    /// after giving the turn back; alone, it commits with `synchronous=FULL` as before.
    @Test func theSyncLeavesTheTurnOnlyWhenSomeoneWaits() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        try writer.enqueue(event("alone", user: "u1"))
        #expect(writer.file.connection.walSyncs == 0)
        #expect(try writer.file.connection.scalarInt("PRAGMA synchronous", operation: "test") == 2)

        let order = try enqueueWithAWriterBehind(writer, "in line")
        #expect(Set(order.withLock { $0 }) == ["writer returned", "behind"])
        #expect(writer.file.connection.walSyncs == 1)
        #expect(try writer.file.connection.scalarInt("PRAGMA synchronous", operation: "test") == 1)
        // The next write alone goes back to FULL.
        try writer.enqueue(event("alone again", user: "u1"))
        #expect(writer.file.connection.walSyncs == 1)
        #expect(try writer.file.connection.scalarInt("PRAGMA synchronous", operation: "test") == 2)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        #expect(try consumer.admin.stats().pending == 3)
    }

    @Test func normalDurabilityNeverSyncsItself() throws {
        let writer = try QueueWriter(path: path, options: QueueOptions(durability: .normal))
        defer { writer.close() }
        let order = try enqueueWithAWriterBehind(writer, "x")
        #expect(Set(order.withLock { $0 }) == ["writer returned", "behind"])
        #expect(writer.file.connection.walSyncs == 0)
        #expect(try writer.file.connection.scalarInt("PRAGMA synchronous", operation: "test") == 1)
    }

    @Test func writersCanBeToldToStayOutOfLine() throws {
        let writer = try QueueWriter(path: path, options: QueueOptions(waitsInLine: false))
        defer { writer.close() }
        try writer.enqueue(event("a", user: "u1"))
        #expect(access(WriteTurn.path(forQueue: path), F_OK) != 0, "no line file was made")
    }
}
