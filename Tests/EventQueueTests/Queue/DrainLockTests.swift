import Testing

@testable import EventQueue

/// One drain pass per queue file at a time, across processes: the lock is a lease row in the file.
@Suite struct DrainLockTests {
    @Test func secondDrainerIsRefusedUntilTheLockIsReleasedOrExpires() throws {
        let directory = TemporaryDirectory()
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
