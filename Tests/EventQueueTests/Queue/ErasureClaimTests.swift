import Testing

@testable import EventQueue

/// The claim's per-user rule with erasures (RecordStateSQL.claimWalk): an erasure is claimed only once no
/// earlier live row of its user is left, and a live erasure holds back every later row of its user, claimable or
/// not, so an erasure and a record of its user are never in flight together, nor in one claim.
@Suite struct ErasureClaimTests: QueueFileSuite {
    let directory = Scratch()

    /// Inserts an erasure of external id `user` as forget does, without deleting anything (so that an earlier record
    /// of the user can still be live, which `forget` itself never leaves).
    private func insertErasure(user: String) throws -> Int64 {
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        try raw.execute(
            """
            INSERT INTO records (kind, payload, erasure)
            VALUES ('attribute', '{"external_id":"\(user)"}', '{"type":"external_ids","after":[]}')
            """)
        return Int64(try raw.scalar("SELECT max(id) FROM records") ?? "0") ?? 0
    }

    @Test func anErasureWaitsForEarlierRecordsAndHoldsBackLaterOnes() throws {
        let early = try enqueue([event("early", user: "u1")])
        let erasure = try insertErasure(user: "u1")
        let late = try enqueue([event("late", user: "u1")])
        let other = try enqueue([event("other", user: "u2")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let first = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(first.records.map(\.id) == early + other, "the erasure waits for u1's earlier record, late for both")
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 60_000).records.isEmpty)
        #expect(try consumer.ack(early + other, lease: first.lease) == 2)

        let second = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(second.records.map(\.id) == [erasure], "pending and due, the erasure still holds back the later record")
        #expect(second.records.first?.erasure == Erasure(type: .externalIDs))
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 60_000).records.isEmpty, "nor while in flight")
        #expect(try consumer.ack([erasure], lease: second.lease) == 1)
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 60_000).records.map(\.id) == late)
    }

    @Test func aLaterRecordWaitsBehindAnErasureWhoseLeaseLapsed() throws {
        let erasure = try insertErasure(user: "u1")
        let late = try enqueue([event("late", user: "u1")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let now = WallClock.nowMilliseconds()
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 1_000, now: now)
        #expect(claim.records.map(\.id) == [erasure])
        // Its lease lapsed: the erasure is claimable again, and still the only thing of u1 that is.
        let again = try consumer.claim(limit: 10, leaseMilliseconds: 1_000, now: now + 2_000)
        #expect(again.records.map(\.id) == [erasure])
        #expect(try consumer.ack([erasure], lease: again.lease) == 1)
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 1_000, now: now + 2_000).records.map(\.id) == late)
    }

    @Test func twoErasuresOfOneUserAreNeverInFlightTogether() throws {
        let first = try insertErasure(user: "u1")
        let second = try insertErasure(user: "u1")
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.map(\.id) == [first])
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 60_000).records.isEmpty)
        #expect(try consumer.ack([first], lease: claim.lease) == 1)
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 60_000).records.map(\.id) == [second])
    }

    /// Issue 40 #4: a dead erasure (Braze refused the delete) keeps holding its user's later records, which would
    /// recreate the profile, until `dead retry` (the deletion goes again, first) or `dead purge` of it.
    @Test func aDeadErasureHoldsItsUserUntilRetriedOrPurged() throws {
        let erasure = try insertErasure(user: "u1")
        let late = try enqueue([event("late", user: "u1")])
        let other = try enqueue([event("other", user: "u2")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        var claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.map(\.id) == [erasure] + other)
        #expect(try consumer.reject([erasure], lease: claim.lease, reason: "Braze refused it") == 1)
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 60_000).records.isEmpty, "u1 is held")
        _ = try consumer.admin.retryDeadChecked(ids: [erasure])
        claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.map(\.id) == [erasure], "the retried deletion goes first")
        #expect(try consumer.reject([erasure], lease: claim.lease, reason: "Braze refused it") == 1)
        #expect(try consumer.admin.purgeDead(ids: [erasure]) == [erasure])
        #expect(try consumer.claim(limit: 10, leaseMilliseconds: 60_000).records.map(\.id) == late)
    }

    @Test func anUnreadableErasureColumnIsDeadLetteredAtClaimNeverReturned() throws {
        let raw = try RawDatabase(path: path)
        _ = try enqueue([event("x", user: "u2")])
        try raw.execute(
            #"INSERT INTO records (kind, payload, erasure) VALUES ('attribute', '{"external_id":"u1"}', '{"type":"x"}')"#
        )
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.count == 1 && claim.records.first?.erasure == nil)
        let dead = try consumer.admin.deadLetters()
        #expect(dead.count == 1)
        #expect(dead.first?.lastError?.contains("erasure column") == true, "\(dead)")
    }
}
