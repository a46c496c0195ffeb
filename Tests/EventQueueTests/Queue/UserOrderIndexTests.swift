import Testing

@testable import EventQueue

/// The per-user probe's index since issue 34 (Migrations/0007): only rows that can hold back a later row of their
/// user have an entry (leased, waiting for a retry, erasures), so a writer's insert and an ack of a record that was
/// simply pending cost it nothing, and the claim's probe still finds every row that blocks.
@Suite struct UserOrderIndexTests: QueueFileSuite {
    let directory = Scratch()

    private func entries(_ raw: RawDatabase) throws -> Int {
        // The index's own condition, so that SQLite can (and, with INDEXED BY, must) answer from the index alone.
        Int(
            try raw.scalar(
                """
                SELECT count(*) FROM records INDEXED BY records_user_order
                WHERE (dead_at_ms IS NULL AND (state = 'leased' OR next_attempt_at_ms > 0)) OR erasure IS NOT NULL
                    OR other_user_key IS NOT NULL
                """) ?? "") ?? -1
    }

    @Test func aPendingRecordHasNoEntryALeasedOrRetryingOneHas() throws {
        let ids = try enqueue((0..<20).map { event("e\($0)", user: "u\($0 % 4)") })
        let raw = try RawDatabase(path: path)
        #expect(try entries(raw) == 0, "enqueued records are pending and due: no entry")
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 4, leaseMilliseconds: 60_000)
        #expect(claim.records.map(\.id) == Array(ids.prefix(4)))
        #expect(try entries(raw) == 4, "leased rows block their users' later rows")
        let now = WallClock.nowMilliseconds()
        try consumer.nack([ids[0], ids[1]], lease: claim.lease, reason: "x", retryAt: now + 60_000, now: now)
        try consumer.ack([ids[2], ids[3]], lease: claim.lease)
        #expect(try entries(raw) == 2, "the two waiting for their retry keep theirs, the acked ones are gone")
        // u0 and u1 wait for a retry: their later records stay back; u2's and u3's are claimable.
        let next = try consumer.claim(limit: 20, leaseMilliseconds: 60_000, now: now)
        #expect(Set(next.records.map(\.userKey)) == ["external_id:u2", "external_id:u3"])
    }

    @Test func theClaimsProbesUseTheNarrowIndexAndTheLiveWalk() throws {
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        let walk = try raw.rows("EXPLAIN QUERY PLAN " + RecordStateSQL.claimWalk).compactMap { $0.last ?? nil }
            .joined(separator: "\n")
        #expect(walk.contains("records_user_order"), "plan:\n\(walk)")
        #expect(walk.contains("records_live"), "plan:\n\(walk)")
        #expect(!walk.contains("SCAN records\n") && !walk.hasSuffix("SCAN records"), "plan:\n\(walk)")
        // The takeover's look for lease owners at every pass reads the narrow index, not the table.
        let plan = try raw.rows("EXPLAIN QUERY PLAN " + RecordStateSQL.leaseOwners).compactMap { $0.last ?? nil }
        #expect(plan.contains("SCAN records USING INDEX records_user_order"), "plan: \(plan)")
    }
}
