import Testing

@testable import EventQueue

/// One drain pass per queue file at a time, across processes: the lock is a lease row in the file.
@Suite struct DrainLockTests {
    @Test func secondDrainerIsRefusedUntilTheLockIsReleasedOrExpires() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let first = try QueueConsumer(path: path, consumerID: "first")
        let second = try QueueConsumer(path: path, consumerID: "second")
        defer {
            first.close()
            second.close()
        }
        let now = WallClock.nowMilliseconds()
        #expect(try first.acquireDrainLock(leaseMilliseconds: 1_000, now: now) == nil)
        #expect(try first.acquireDrainLock(leaseMilliseconds: 1_000, now: now + 500) == nil, "the holder renews")
        let holder = try second.acquireDrainLock(leaseMilliseconds: 1_000, now: now + 1_000)
        #expect(holder == DrainLockHolder(owner: "first", expiresAtMilliseconds: now + 1_500))
        try second.releaseDrainLock()  // not the holder: no effect
        #expect(try second.acquireDrainLock(leaseMilliseconds: 1_000, now: now + 1_499)?.owner == "first")
        #expect(try second.acquireDrainLock(leaseMilliseconds: 1_000, now: now + 1_500) == nil, "expired: taken over")
        #expect(try first.acquireDrainLock(leaseMilliseconds: 1_000, now: now + 1_600)?.owner == "second")
        try second.releaseDrainLock()
        #expect(try first.acquireDrainLock(leaseMilliseconds: 1_000, now: now + 1_700) == nil)
    }
}

@Suite struct DrainLockTakeoverTests {
    /// A daemon restarted after `kill -9` on the same host need not wait for its predecessor's lock to expire.
    @Test func lockOfADeadProcessOnThisHostIsTakenOverAtOnce() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let host = QueueConsumer.hostName()
        // pid 2^22+1 is above Linux's pid_max limit, so no such process exists.
        let crashed = try QueueConsumer(path: path, consumerID: "\(host):4194305:dead")
        let live = try QueueConsumer(path: path, consumerID: "\(host):1:init")  // pid 1 always exists
        let restarted = try QueueConsumer(path: path)
        defer {
            crashed.close()
            live.close()
            restarted.close()
        }
        #expect(try crashed.acquireDrainLock(leaseMilliseconds: 60_000) == nil)
        #expect(try restarted.acquireDrainLock(leaseMilliseconds: 60_000) == nil)
        try restarted.releaseDrainLock()
        #expect(try live.acquireDrainLock(leaseMilliseconds: 60_000) == nil)
        #expect(try restarted.acquireDrainLock(leaseMilliseconds: 60_000)?.owner == "\(host):1:init")
    }
}

/// Issue 16, defect 5: a live process on this host keeps its drain lock whatever the clocks say.
@Suite struct DrainLockClockDisagreementTests {
    @Test func aLiveLocalHolderKeepsItsLockEvenWhenItLooksExpiredToAClockAhead() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let host = QueueConsumer.hostName()
        let live = try QueueConsumer(path: path, consumerID: "\(host):1:init")  // pid 1 always runs
        let ahead = try QueueConsumer(path: path)
        defer {
            live.close()
            ahead.close()
        }
        let now = WallClock.nowMilliseconds()
        #expect(try live.acquireDrainLock(leaseMilliseconds: 1_000, now: now) == nil)
        // A daemon whose clock runs 20 minutes ahead sees the lock long expired: it must not take it.
        let holder = try ahead.acquireDrainLock(leaseMilliseconds: 1_000, now: now + 20 * 60_000)
        #expect(holder?.owner == "\(host):1:init")
        // A dead holder's lock is still taken over at once.
        let dead = try QueueConsumer(path: path, consumerID: "\(host):4194305:gone")
        defer { dead.close() }
        try live.releaseDrainLock()
        #expect(try dead.acquireDrainLock(leaseMilliseconds: 60_000, now: now) == nil)
        #expect(try ahead.acquireDrainLock(leaseMilliseconds: 1_000, now: now) == nil)
    }
}
