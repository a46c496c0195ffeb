import EventQueue
import Foundation
import Testing

@testable import EventQueueDelivery

/// `QueueStore` runs every SQLite call on its own serial executor, never on the cooperative pool, whose threads
/// (two on a 2-core machine) every other task in the process shares. Which thread runs a job is not observable
/// from Swift 6 code, so these tests show it by behaviour: a ticking task keeps to time while SQLite works or waits.
///
/// Bound: 500 ms. Run alone, the worst tick is 1 to 5 ms late. Run with the rest of this target it can be ~120 ms:
/// other tests call SQLite and the `sqlite3` shell synchronously from their own tasks, on the same two pool threads.
/// With two CPU hogs alongside it was once 220 ms. 500 ms is generous for that, and still far from what a blocked
/// pool produces (2 s in the lock test).
@Suite(.timeLimit(.minutes(2)))
struct QueueStoreTests {
    let directory = Scratch()

    /// Sleeps `interval` `ticks` times; returns the worst lateness of a wake-up.
    func worstLateness(ticks: Int = 50, interval: Duration = .milliseconds(10)) async throws -> Duration {
        let clock = ContinuousClock()
        var worst = Duration.zero
        for _ in 0..<ticks {
            let deadline = clock.now + interval
            try await Task.sleep(until: deadline, clock: clock)
            worst = max(worst, clock.now - deadline)
        }
        return worst
    }

    /// The load test: a drain committing with fsync record by record. On its own it would not catch SQLite on the
    /// pool (checked by making `QueueStore` a default actor: it still passes, since each fsync holds one of the two
    /// pool threads for a few milliseconds only); the lock test below does.
    @Test func aFullDurabilityDrainLeavesThePoolResponsive() async throws {
        let path = directory.queuePath
        let ids = try enqueue((0..<2_000).map { testEvent("e\($0)", user: "user\($0 % 50)") }, at: path)
        let started = Signal()
        let sink = ScriptedSink { call, batch in
            if call == 0 { started.fire() }
            return DeliveryReport(.delivered, for: batch)
        }
        let stop = Locked(false)
        // One record per batch: an fsync'd commit per record (an ack shares its transaction with the next claim).
        let drainer = try makeDrainer(
            path, sink: sink, options: DrainOptions(batchSize: 1), queueOptions: QueueOptions(durability: .full))
        async let drained = drainOnce(drainer, shouldStop: { stop.value })

        await started.wait()
        let callsBefore = sink.callCount
        let worst = try await worstLateness()
        let callsAfter = sink.callCount
        stop.withLock { $0 = true }
        let summary = try await drained

        #expect(worst < .milliseconds(500), "a 10 ms tick was \(worst) late while the drain committed")
        #expect(callsAfter > callsBefore, "the drain made progress during the measurement")
        #expect(callsAfter < ids.count, "the drain was still running when the measurement ended")
        // Stopped gracefully: what was delivered is gone, the rest is pending, nothing is left leased.
        #expect(summary.delivered == sink.callCount)
        #expect(sink.ids == Array(ids.prefix(sink.callCount)))
        #expect(summary.remaining?.pending == ids.count - summary.delivered)
        #expect(summary.remaining?.leased == 0)
    }

    /// The sharper version: every drainer's first SQLite call waits (in SQLite's busy handler) for a write lock
    /// another process holds for 2 s. Were the stores' SQLite calls on the cooperative pool, one drainer per pool
    /// thread would block the whole pool for those 2 s and the ticking task could not run at all (checked by
    /// making `QueueStore` a default actor: a tick then comes about 2 s late). The lock is released by a plain thread,
    /// so the test cannot deadlock on the pool it is measuring.
    @Test func drainersWaitingForAWriteLockLeaveThePoolResponsive() async throws {
        let drainers = max(2, ProcessInfo.processInfo.activeProcessorCount)
        var paths: [String] = []
        var locks: [SQLiteShell.WriteLock] = []
        for index in 0..<drainers {
            let path = directory.file("queue\(index).db")
            try enqueue((0..<5).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
            paths.append(path)
            locks.append(try SQLiteShell.WriteLock(path: path))
        }
        let sinks = paths.map { _ in ScriptedSink.acceptingEverything() }
        let heldLocks = locks
        let clock = ContinuousClock()
        let start = clock.now
        let released = Signal()
        let releaseTime = Locked<ContinuousClock.Instant?>(nil)
        let deliveredWhileLocked = Locked(-1)
        runOnPlainThread(after: 2.0) {
            deliveredWhileLocked.withLock { $0 = sinks.map(\.callCount).reduce(0, +) }
            releaseTime.withLock { $0 = clock.now }
            for lock in heldLocks { lock.release() }
            released.fire()
        }
        let summaries = Task {
            try await withThrowingTaskGroup(of: DrainSummary.self) { group in
                for (path, sink) in zip(paths, sinks) {
                    let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 10))
                    group.addTask { try await drainOnce(drainer) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }

        let worst = try await worstLateness()
        let measured = clock.now
        await released.wait()
        let results = try await summaries.value

        #expect(worst < .milliseconds(500), "a 10 ms tick was \(worst) late while \(drainers) drainers waited")
        #expect(deliveredWhileLocked.value == 0, "the drainers were blocked until the lock was released")
        let unlockedAt = try #require(releaseTime.value)
        #expect(measured < unlockedAt, "the measurement (\(measured - start)) ended while the lock was still held")
        #expect(results.count == drainers)
        #expect(results.allSatisfy { $0.delivered == 5 && $0.result == .allDelivered }, "they finished once unlocked")
    }
}

/// Runs `action` on a thread of its own after `delay` seconds: outside the cooperative pool, whatever state that
/// pool is in.
func runOnPlainThread(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) {
    let thread = Thread {
        Thread.sleep(forTimeInterval: delay)
        action()
    }
    thread.start()
}
