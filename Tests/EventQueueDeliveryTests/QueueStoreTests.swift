import EventQueue
import Foundation
import Testing

@testable import EventQueueDelivery

/// `QueueStore` runs every SQLite call on its own serial executor, never on the cooperative pool, whose threads
/// (two on a 2-core machine) every other task in the process shares. The first test checks it directly (the
/// executor's queue is tagged); the others show it by behaviour: a ticking task keeps to time while SQLite works
/// or waits.
///
/// Bound: 2 s. Run alone, the worst tick is 1 to 5 ms late. Run with the rest of this target it can be ~120 ms:
/// other tests call SQLite and the `sqlite3` shell synchronously from their own tasks, on the same two pool threads.
/// With two CPU hogs alongside it was once 220 ms; alongside the daemon suites of `queuedTests` while other builds
/// shared the 2 cores, 623 ms (both tests at once: a machine-wide stall). 2 s is generous for that, and still far
/// from what a blocked pool produces (the 10 s guard in the lock test, or SQLite's 5 s busy timeout).
@Suite(.timeLimit(.minutes(2)))
struct QueueStoreTests {
    let directory = Scratch()
    static let bound = Duration.seconds(2)

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

    /// What the other tests can only show by behaviour, checked at the source: the body of `withConsumer` (every
    /// SQLite call of the drain loop) runs on the store's own queue. Made a default actor, `QueueStore` fails this.
    @Test func everyConsumerCallRunsOnTheStoresOwnQueue() async throws {
        let store = try QueueStore(path: directory.queuePath)
        let inside = try await store.withConsumer { _ in store.runsOnItsQueue }
        let stats = try await store.stats()
        await store.close()
        #expect(inside, "withConsumer ran its body off the store's queue")
        #expect(!store.runsOnItsQueue, "the test's own task is not on the store's queue")
        #expect(stats.pending == 0)
    }

    /// A drain committing with fsync record by record keeps other tasks on time (no 500 ms stall) and stops
    /// gracefully. What it cannot show is which thread runs SQLite (each fsync holds a pool thread a few
    /// milliseconds only: a default-actor `QueueStore` passes it too); the two tests around it do.
    @Test func aFullDurabilityDrainStopsCleanlyWithoutStallingOtherTasks() async throws {
        let path = directory.queuePath
        let ids = try enqueue((0..<2_000).map { testEvent("e\($0)", user: "user\($0 % 50)") }, at: path)
        let started = Signal()
        let sink = ScriptedSink { call, batch in
            if call == 0 { started.fire() }
            return DeliveryReport(.delivered, for: batch)
        }
        let stop = Locked(false)
        // One record per batch: one fsync'd commit per record (the ack of one batch and the claim of the next are
        // one transaction).
        let drainer = try makeDrainer(
            path, sink: sink, options: DrainOptions(batchSize: 1), queueOptions: QueueOptions(durability: .full))
        async let drained = drainOnce(drainer, shouldStop: { stop.value })

        await started.wait()
        let callsBefore = sink.callCount
        let worst = try await worstLateness()
        let callsAfter = sink.callCount
        stop.withLock { $0 = true }
        let summary = try await drained

        #expect(worst < Self.bound, "a 10 ms tick was \(worst) late while the drain committed")
        #expect(callsAfter > callsBefore, "the drain made progress during the measurement")
        #expect(callsAfter < ids.count, "the drain was still running when the measurement ended")
        // Stopped gracefully: what was delivered is gone, the rest is pending, nothing is left leased.
        #expect(summary.delivered == sink.callCount)
        #expect(sink.ids == Array(ids.prefix(sink.callCount)))
        #expect(summary.remaining?.pending == ids.count - summary.delivered)
        #expect(summary.remaining?.leased == 0)
    }

    /// By behaviour: every drainer's first SQLite call waits (in SQLite's busy handler) for a write lock another
    /// process holds until the ticking measurement has ended. Were the stores' SQLite calls on the cooperative
    /// pool, one drainer per pool thread would block the whole pool and the ticking task could not run at all
    /// (checked by making `QueueStore` a default actor: a tick then comes about 10 s late). The lock is released
    /// by a plain thread, when the measurement ends or after a 10 s guard, so the test cannot deadlock on the
    /// pool it is measuring.
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
        let released = Signal()
        let measurementEnded = DispatchSemaphore(value: 0)
        let deliveredWhileLocked = Locked(-1)
        runOnPlainThread {
            _ = measurementEnded.wait(timeout: .now() + 10)
            deliveredWhileLocked.withLock { $0 = sinks.map(\.callCount).reduce(0, +) }
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
        measurementEnded.signal()
        await released.wait()
        let results = try await summaries.value

        #expect(worst < Self.bound, "a 10 ms tick was \(worst) late while \(drainers) drainers waited")
        #expect(deliveredWhileLocked.value == 0, "the drainers were blocked until the lock was released")
        #expect(results.count == drainers)
        #expect(results.allSatisfy { $0.delivered == 5 && $0.result == .allDelivered }, "they finished once unlocked")
    }
}

/// Runs `action` on a thread of its own: outside the cooperative pool, whatever state that pool is in.
func runOnPlainThread(_ action: @escaping @Sendable () -> Void) {
    let thread = Thread { action() }
    thread.start()
}
