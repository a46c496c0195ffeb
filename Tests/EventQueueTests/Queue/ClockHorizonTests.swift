import Testing

@testable import EventQueue

/// Times in the shared file are wall-clock milliseconds. A time further ahead than the library ever writes
/// (`ClockHorizon`) comes from a clock that was ahead of the reader's, and counts as passed; a plausible one is
/// honoured. Each test writes state at one `now` and reads it an hour earlier: the clock stepped back.
@Suite struct ClockHorizonTests: QueueFileSuite {
    let directory = Scratch()
    static let hour: Int64 = 3_600_000

    @Test func aRetryParkedUnderAClockThatWentBackAnHourIsDueAtOnce() throws {
        let ids = try enqueue([event("a", user: "u1"), event("b", user: "u1"), event("c", user: "u2")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let now = WallClock.nowMilliseconds()
        let claim = try consumer.claim(limit: 1, leaseMilliseconds: 10_000, now: now)
        try consumer.nack([ids[0]], lease: claim.lease, reason: "503", retryAt: now + 120_000, now: now)
        // A minute later the retry is still a minute off: honoured, and it holds back u1's next record.
        let early = try consumer.claim(limit: 10, leaseMilliseconds: 10_000, now: now + 60_000)
        #expect(early.records.map(\.id) == [ids[2]])
        // The next time anything comes due: u2's fresh 10 s lease, then the retry.
        #expect(try consumer.admin.stats(now: now + 60_000).nextRetryAtMilliseconds == now + 70_000)
        #expect(try consumer.admin.stats(now: now + 70_000).nextRetryAtMilliseconds == now + 120_000)
        // The clock is stepped back an hour: the retry now lies an hour and two minutes ahead, beyond any wait
        // the library writes, so it is due now, and u1's order is kept.
        #expect(try consumer.admin.stats(now: now - Self.hour).nextRetryAtMilliseconds == nil)
        let late = try consumer.claim(limit: 10, leaseMilliseconds: 10_000, now: now - Self.hour)
        // Everything, in id order: u1's parked record, its successor right behind it in the same batch, and u2's
        // record whose 10 s lease (written an hour "ahead") counts as expired too.
        #expect(late.records.map(\.id) == ids)
        #expect(try consumer.ack(ids, lease: late.lease, now: now - Self.hour) == 3)
    }

    @Test func aLeaseWrittenUnderAClockThatWentBackAnHourIsExpired() throws {
        let ids = try enqueue([event("a", user: "u1"), event("b", user: "u1")])
        let crashed = try QueueConsumer(path: path)
        let next = try QueueConsumer(path: path)
        defer {
            crashed.close()
            next.close()
        }
        let now = WallClock.nowMilliseconds()
        let abandoned = try crashed.claim(limit: 1, leaseMilliseconds: 60_000, now: now)
        #expect(abandoned.records.map(\.id) == [ids[0]])
        // Same clock: the lease is honoured and blocks the user's next record.
        #expect(try next.claim(limit: 10, leaseMilliseconds: 60_000, now: now + 59_999).records.isEmpty)
        // A step back of 5 minutes keeps it plausible (5 min + 60 s < 15 min): still honoured.
        #expect(try next.claim(limit: 10, leaseMilliseconds: 60_000, now: now - 300_000).records.isEmpty)
        // A step back of an hour: expired, claimed again, with the user's next record behind it, in order.
        let reclaimed = try next.claim(limit: 10, leaseMilliseconds: 60_000, now: now - Self.hour)
        #expect(reclaimed.records.map(\.id) == ids)
        #expect(try crashed.ack([ids[0]], lease: abandoned.lease) == 0, "the old lease's late ack is discarded")
    }

    @Test func nothingIsWrittenBeyondTheHorizon() throws {
        let ids = try enqueue([event("a", user: "u1")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let now = WallClock.nowMilliseconds()
        let horizon = ClockHorizon.longestWaitMilliseconds
        var lease = try consumer.claim(limit: 1, leaseMilliseconds: 24 * Self.hour, now: now).lease
        #expect(lease.expiresAtMilliseconds == now + horizon)
        try consumer.renew(&lease, ids: ids, leaseMilliseconds: 24 * Self.hour, now: now + 1)
        #expect(lease.expiresAtMilliseconds == now + 1 + horizon)
        try consumer.nack(ids, lease: lease, reason: "later", retryAt: now + 24 * Self.hour, now: now + 2)
        #expect(try consumer.admin.peek().first?.nextAttemptAtMilliseconds == now + 2 + horizon)
        #expect(try consumer.acquireDrainLock(leaseMilliseconds: 24 * Self.hour, now: now) == nil)
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT expires_at_ms FROM drain_lock") == String(now + horizon))
    }

    @Test func anImplausibleDrainLockIsTakenFromAnotherHostButNotFromALiveLocalHolder() throws {
        let host = QueueConsumer.hostName()
        let remote = try QueueConsumer(path: path, consumerID: "elsewhere.example:4242:abc")
        let local = try QueueConsumer(path: path, consumerID: "\(host):1:init")  // pid 1 always exists
        let me = try QueueConsumer(path: path)
        defer {
            remote.close()
            local.close()
            me.close()
        }
        let now = WallClock.nowMilliseconds()
        #expect(try remote.acquireDrainLock(leaseMilliseconds: 60_000, now: now) == nil)
        #expect(try me.acquireDrainLock(leaseMilliseconds: 60_000, now: now - 60_000)?.owner == remote.consumerID)
        #expect(try me.acquireDrainLock(leaseMilliseconds: 60_000, now: now - Self.hour) == nil, "implausible")
        try me.releaseDrainLock()
        // A live holder on this host renews within a third of its lease, in the stepped clock: it keeps the lock.
        #expect(try local.acquireDrainLock(leaseMilliseconds: 60_000, now: now) == nil)
        #expect(try me.acquireDrainLock(leaseMilliseconds: 60_000, now: now - Self.hour)?.owner == local.consumerID)
    }
}
