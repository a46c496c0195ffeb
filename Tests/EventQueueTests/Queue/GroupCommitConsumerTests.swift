import Testing

@testable import EventQueue

/// `QueueConsumer.ackAndClaim(_:claims:limit:...)`: the acks of every batch that came back and the claims that
/// replace them in one transaction. The claims of one call are delivered concurrently, so they must never share
/// a user, and a record waiting for a retry must hold back its user's later records in every one of them.
@Suite struct GroupCommitConsumerTests: QueueFileSuite {
    let directory = Scratch()

    /// Each claim of the call runs after the ones before it, whose rows are leased by then: alice's second record
    /// is not handed to a second batch while her first is in the first one.
    @Test func theClaimsOfOneCallNeverShareAUser() throws {
        _ = try enqueue([
            event("a1", user: "alice"), event("a2", user: "alice"), event("b1", user: "bob"),
            event("b2", user: "bob"), event("c1", user: "carol"),
        ])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let result = try consumer.ackAndClaim([], claims: 5, limit: 1, leaseMilliseconds: 60_000)
        #expect(result.acked == 0)
        #expect(result.claims.map { $0.records.map(\.id) } == [[1], [3], [5]])
        #expect(Set(result.claims.map(\.lease.token)).count == 3)
        let users = result.claims.flatMap { $0.records.map(\.userKey) }
        #expect(Set(users).count == users.count, "a user in two batches: \(users)")
    }

    /// A record waiting for a retry holds back its user's later records in every claim of the call, and a short
    /// claim (the end of what is claimable) ends the call.
    @Test func aRecordWaitingForARetryHoldsBackItsUserInEveryClaim() throws {
        _ = try enqueue([
            event("a1", user: "alice"), event("b1", user: "bob"), event("a2", user: "alice"),
            event("b2", user: "bob"),
        ])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let now = WallClock.nowMilliseconds()
        let first = try consumer.claim(limit: 1, leaseMilliseconds: 60_000, now: now)
        #expect(first.records.map(\.id) == [1])
        try consumer.nack([1], lease: first.lease, reason: "503", retryAt: now + 60_000, now: now)
        let result = try consumer.ackAndClaim([], claims: 4, limit: 1, leaseMilliseconds: 60_000, now: now)
        #expect(result.claims.map { $0.records.map(\.id) } == [[2]], "alice's a2 must wait for a1's retry")
    }

    /// Several delivered batches are acked in one call, before its claims: their users' next records are
    /// claimable in the same transaction.
    @Test func severalBatchesAreAckedBeforeTheClaims() throws {
        _ = try enqueue([
            event("a1", user: "alice"), event("b1", user: "bob"), event("a2", user: "alice"),
            event("b2", user: "bob"),
        ])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let first = try consumer.claim(limit: 1, leaseMilliseconds: 60_000)
        let second = try consumer.claim(limit: 1, leaseMilliseconds: 60_000)
        #expect(first.records.map(\.id) == [1] && second.records.map(\.id) == [2])
        let result = try consumer.ackAndClaim(
            [([1], first.lease), ([2], second.lease)], claims: 2, limit: 1, leaseMilliseconds: 60_000)
        #expect(result.acked == 2)
        #expect(result.claims.map { $0.records.map(\.id) } == [[3], [4]])
        let stats = try consumer.admin.stats()
        #expect(stats.pending == 0 && stats.leased == 2)
    }

    /// A claim changes the lease columns only, which the per-user index no longer holds (Migrations/0004): a
    /// claim of 100 records of 100 users, whose index entries fill a page each, writes a handful of pages, not one
    /// per user (109 with the index of schema 3).
    @Test func aClaimDoesNotRewriteThePerUserIndex() throws {
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        try raw.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
            INSERT INTO records (kind, payload)
            SELECT 'event', json_object('external_id', 'user-' || (i % 100), 'name', 'e' || i) FROM n
            """)
        try raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let pageSize = Int(try raw.scalar("PRAGMA page_size") ?? "") ?? 4096
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 100, leaseMilliseconds: 60_000)
        #expect(Set(claim.records.map(\.userKey)).count == 100)
        let walBytes = try consumer.admin.stats().walBytes
        let frames = max(0, Int(walBytes) - 32) / (pageSize + 24)
        #expect(frames < 30, "a claim of 100 records for 100 users wrote \(frames) pages")
    }
}
