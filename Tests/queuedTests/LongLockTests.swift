import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Another process holding the queue's write lock for longer than the daemon's busy timeout (issue 22 #4 and #9):
/// Python's `sqlite3` in `BEGIN EXCLUSIVE`, as an admin's shell or a long bulk import would.
@Suite(.serialized) struct LongLockTests {
    /// Issue 22 #4: a batch Braze accepted while the lock was held could not be acked (the ack hit the busy
    /// timeout), the pass was abandoned, and the records were delivered again once their lease lapsed. Now the ack
    /// is retried until the lock comes back, however long that takes, and nothing arrives twice.
    @Test func recordsDeliveredWhileTheLockIsHeldAreAckedOnceItComesBackNotDeliveredTwice() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 1500  // the batches are at Braze when the lock is taken
        try await BrazeScenario.run(records: MarkedRecord.make(80, users: 8), faults: faults) { scenario in
            // A 2 s lease, renewed every 0.7 s while a request is out, and a busy timeout of 1 s: the 15 s hold
            // outlasts any few tries. Without the retried ack the pass gives up on the delivered batch, its lease
            // lapses during the hold, and the next pass sends it again.
            let daemon = try await scenario.startDaemon(
                arguments: ["--lease-seconds", "2", "--batch-size", "20"],
                environment: ["EVENTQUEUE_BUSY_TIMEOUT_MS": "1000"])
            try await withDaemon(daemon) { daemon in
                daemon.signal(SIGUSR1)
                try await waitFor("the first requests at Braze") { scenario.server.stats().requests >= 1 }
                let holder = try await WriteLockHolder(db: scenario.db, seconds: 15, in: scenario.scratch)
                #expect(await holder.finished() == 0, "\(holder.child.standardError)")
                try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(90))
                #expect(
                    daemon.log.contains("retrying their ack"), "the lock never met an ack: \(daemon.log.suffix(3000))")
            }
            let report = scenario.expectDeliveredOnce()
            print("LongLock ack: records 80, requests \(scenario.server.stats().requests), \(report)")
        }
    }

    /// Issue 22 #9: a pass that failed because the queue was busy made `drain --wait` exit 74 (I/O error); the
    /// table says 75 (busy, retry), as `drain --local` exits.
    @Test func drainWaitExits75WhenTheDaemonsPassFailsOnABusyQueue() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await enqueueEvents(5, db: db, in: scratch)
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, environment: ["EVENTQUEUE_BUSY_TIMEOUT_MS": "300"])
        try await withDaemon(daemon) { daemon in
            let holder = try await WriteLockHolder(db: db, seconds: 60, in: scratch)
            let drain = try await queuectl(["drain", "--wait", "--socket", daemon.socket], db: db, in: scratch)
            await holder.release()
            #expect(drain.status == 75, "\(drain.stdout) \(drain.stderr)")
            #expect(drain.stderr.contains("stayed locked by another process"), "\(drain.stderr)")
            // Once the lock is gone the next drain delivers everything.
            let again = try await queuectl(["drain", "--wait", "--socket", daemon.socket], db: db, in: scratch)
            #expect(again.status == 0, "\(again.stdout) \(again.stderr)")
        }
    }
}
