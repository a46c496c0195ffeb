import Dispatch
import Foundation
import Testing

@testable import EventQueue

/// The busy handler (`WriteGate`): waits for another connection's write lock up to the timeout, gives up with a
/// typed `busy` error at the timeout (not before, not long after), and a checkpoint's shorter wait does not
/// stick to the connection.
@Suite struct WriteGateTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    /// Holds the write lock from another connection on its own thread for `milliseconds`, then commits. Returns
    /// once the lock is taken; `released` is signalled after the commit.
    func holdWriteLock(for milliseconds: Int) throws -> DispatchSemaphore {
        let taken = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        let path = self.path
        Thread.detachNewThread {
            do {
                let raw = try RawDatabase(path: path)
                try raw.execute("BEGIN IMMEDIATE")
                taken.signal()
                // Holding the lock for this long is what the tests measure the busy handler against: the sleep is
                // the other process's transaction, not a wait for an event.
                usleep(useconds_t(milliseconds * 1000))
                try raw.execute("COMMIT")
            } catch {
                taken.signal()
                Issue.record("the lock holder failed: \(error)")
            }
            released.signal()
        }
        taken.wait()
        return released
    }

    @Test func waitsOutALockHeldPastItsPatientStepsAndThenWrites() throws {
        try QueueWriter(path: path).close()
        let writer = try QueueWriter(path: path, options: QueueOptions(busyTimeoutMilliseconds: 5_000))
        defer { writer.close() }
        let released = try holdWriteLock(for: 400)
        let start = ContinuousClock.now
        let id = try writer.enqueue(event("after the lock", user: "u1"))
        let waited = ContinuousClock.now - start
        released.wait()
        #expect(id == 1)
        #expect(waited >= .milliseconds(350), "enqueued after \(waited) while the lock was held for 400 ms")
    }

    @Test func givesUpAtItsTimeoutWithATypedBusyError() throws {
        try QueueWriter(path: path).close()
        let writer = try QueueWriter(path: path, options: QueueOptions(busyTimeoutMilliseconds: 300))
        defer { writer.close() }
        let released = try holdWriteLock(for: 3_000)
        let start = ContinuousClock.now
        var caught: QueueError?
        do {
            _ = try writer.enqueue(event("too late", user: "u1"))
        } catch {
            caught = error
        }
        let waited = ContinuousClock.now - start
        guard case .busy(_, let timeout) = caught else {
            Issue.record("expected busy, got \(String(describing: caught))")
            released.wait()
            return
        }
        #expect(timeout == 300)
        #expect(waited >= .milliseconds(300), "gave up after \(waited), before its 300 ms timeout")
        #expect(waited < .milliseconds(2_500), "waited \(waited): past its own timeout, for the lock's release")
        released.wait()
        // Nothing was written by the failed call, and the writer works once the lock is free.
        #expect(try writer.enqueue(event("now", user: "u1")) == 1)
    }

    /// The closing checkpoint waits at most 100 ms; afterwards the consumer must wait its full timeout again.
    @Test func aCheckpointsShortWaitDoesNotStick() throws {
        let writer = try QueueWriter(path: path)
        _ = try writer.enqueue(event("a", user: "u1"))
        writer.close()
        let consumer = try QueueConsumer(path: path, options: QueueOptions(busyTimeoutMilliseconds: 5_000))
        defer { consumer.close() }
        try consumer.admin.checkpointAndVacuum()
        let released = try holdWriteLock(for: 400)
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 10_000)
        released.wait()
        #expect(claim.records.count == 1)
    }

    @Test func aZeroTimeoutDoesNotWaitAtAll() {
        #expect(WriteGate(queuePath: path, timeoutMilliseconds: 0).shouldRetry(attempt: 0) == false)
        #expect(WriteGate(queuePath: path, timeoutMilliseconds: 1_000).shouldRetry(attempt: 0) == true)
    }
}
