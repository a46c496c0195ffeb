import Testing

@testable import EventQueue

/// The daemon's side of the limits (issue 30 #4 and #5, `QueueAdmin.enforceLimits`), on a clock the test sets
/// (`now`): pending records past the max age become dead letters whose reason begins with `expired` (never a
/// leased one, never an erasure, never deleted); what foreign writers stored past the size limit is dropped under
/// drop-oldest and kept under refuse; every record given up is counted.
@Suite struct LimitEnforcementTests: QueueFileSuite {
    let directory = Scratch()
    static let fast = QueueOptions(durability: .normal, minimumFreeBytes: 0)

    func withAdmin<T>(_ body: (QueueAdmin) throws -> T) throws -> T {
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        return try body(admin)
    }

    func createdAt(_ raw: RawDatabase) throws -> Int64 {
        try Int64(raw.scalar("SELECT max(created_at_ms) FROM records") ?? "") ?? 0
    }

    @Test func pendingRecordsPastTheMaxAgeBecomeExpiredDeadLetters() throws {
        let ids = try enqueue((0..<10).map { event("e\($0)", user: "u\($0 % 3)") })
        let raw = try RawDatabase(path: path)
        let enqueuedAt = try createdAt(raw)
        try withAdmin { admin throws in
            try admin.recordLimits(QueueLimits(maxAgeSeconds: 60))
            #expect(try admin.enforceLimits(now: enqueuedAt + 59_000).expired == 0)
            #expect(try admin.stats().pending == 10)
            let result = try admin.enforceLimits(now: enqueuedAt + 61_000)
            #expect(result.expired == 10)
            #expect(try admin.drops() == QueueDrops(expired: 10))
            let dead = try admin.deadLetters()
            #expect(dead.map(\.id) == ids, "kept as dead letters, none deleted")
            for letter in dead {
                #expect(letter.lastError?.hasPrefix("expired: enqueued 61 s ago, max age 60 s") == true, "\(letter)")
                #expect(letter.deadAtMilliseconds == enqueuedAt + 61_000)
            }
            // Nothing more to expire: the count does not grow.
            #expect(try admin.enforceLimits(now: enqueuedAt + 120_000).expired == 0)
            #expect(try admin.drops().expired == 10)
        }
    }

    @Test func expiryNeverTouchesLeasedRecordsOrErasures() throws {
        let ids = try enqueue((0..<4).map { event("e\($0)", user: "u\($0)") })
        let raw = try RawDatabase(path: path)
        try raw.execute(
            """
            INSERT INTO records (kind, payload, erasure, created_at_ms)
            VALUES ('attribute', '{"external_id":"gone"}', '{"type":"external_ids","after":[]}', 1000)
            """)
        let enqueuedAt = try createdAt(raw)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let leased = try consumer.claim(limit: 2, leaseMilliseconds: 600_000, now: enqueuedAt).records.map(\.id)
        #expect(leased == Array(ids.prefix(2)))
        try withAdmin { admin throws in
            try admin.recordLimits(QueueLimits(maxAgeSeconds: 1))
            #expect(try admin.enforceLimits(now: enqueuedAt + 10_000).expired == 2)
        }
        let rows = try raw.rows("SELECT id, state FROM records ORDER BY id").map { "\($0[0] ?? "")=\($0[1] ?? "")" }
        #expect(rows == ["\(ids[0])=leased", "\(ids[1])=leased", "\(ids[2])=dead", "\(ids[3])=dead", "5=pending"])
    }

    /// `dead retry` of an expired record gives it its delivery attempt: it is not expired again until that fails.
    @Test func aRetriedExpiredRecordGetsItsAttempt() throws {
        let ids = try enqueue([event("e", user: "u1")])
        let raw = try RawDatabase(path: path)
        let enqueuedAt = try createdAt(raw)
        try withAdmin { admin throws in
            try admin.recordLimits(QueueLimits(maxAgeSeconds: 1))
            #expect(try admin.enforceLimits(now: enqueuedAt + 5_000).expired == 1)
            #expect(try admin.retryDeadChecked(ids: ids).retried == ids)
            #expect(try admin.enforceLimits(now: enqueuedAt + 6_000).expired == 0)
        }
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 1, leaseMilliseconds: 60_000, now: enqueuedAt + 7_000)
        _ = try consumer.nack(
            ids, lease: claim.lease, reason: "HTTP 503", retryAt: enqueuedAt + 8_000, now: enqueuedAt + 7_000)
        try withAdmin { admin throws in
            #expect(try admin.enforceLimits(now: enqueuedAt + 9_000).expired == 1)
            #expect(try admin.drops().expired == 2)
        }
    }

    /// A record dated beyond the clock horizon (its writer's clock ahead) is not expired by its own time, which
    /// would keep it for as long as that clock is off, but with the records enqueued after it once they expire.
    @Test func aRecordDatedAheadExpiresWithTheRecordsEnqueuedAfterIt() throws {
        _ = try enqueue([event("first", user: "u1")])
        let raw = try RawDatabase(path: path)
        let enqueuedAt = try createdAt(raw)
        let day: Int64 = 24 * 3600 * 1000
        // A foreign writer whose clock is ten days ahead, then one a few minutes ahead (within the horizon).
        try raw.execute(
            """
            INSERT INTO records (kind, payload, created_at_ms)
            VALUES ('event', '{"external_id":"u2","name":"ahead"}', \(enqueuedAt + 10 * day)),
                   ('event', '{"external_id":"u3","name":"slightly"}', \(enqueuedAt + 5 * 60_000))
            """)
        try withAdmin { admin throws in
            try admin.recordLimits(QueueLimits(maxAgeSeconds: 3600))
            // Alone, the far-ahead record would not expire by its time: nothing after it has expired yet.
            #expect(try admin.enforceLimits(now: enqueuedAt + 30 * 60_000).expired == 0)
        }
        // A later record by a writer with a right clock, enqueued after it, expires by its own time.
        _ = try enqueue([event("later", user: "u4")])
        let laterAt = try Int64(raw.scalar("SELECT created_at_ms FROM records WHERE id = 4") ?? "") ?? 0
        try withAdmin { admin throws in
            let result = try admin.enforceLimits(now: laterAt + 3_601_000)
            #expect(result.expired == 3)
            let reasons = Dictionary(uniqueKeysWithValues: try admin.deadLetters().map { ($0.id, $0.lastError ?? "") })
            #expect(
                reasons[2]?.hasPrefix("expired: enqueued before record 4, past the max age of 3600 s; dated ") == true)
            #expect(reasons[2]?.hasSuffix(" s ahead (its writer's clock)") == true)
            #expect(
                reasons[1]?.hasPrefix("expired: enqueued ") == true
                    && reasons[4]?.hasPrefix("expired: enqueued 3601 s ago") == true)
            // A few minutes ahead is within the horizon: it expires by its own time, those minutes later.
            #expect(reasons[3] == nil)
            #expect(try admin.enforceLimits(now: enqueuedAt + 5 * 60_000 + 3_601_000).expired == 1)
            #expect(try admin.drops().expired == 4)
        }
    }

    /// Writers that do not know the limit (a foreign INSERT) take the file past it; under drop-oldest the daemon's
    /// enforcement brings the pages in use and the file on disk back under it.
    @Test func foreignRowsPastTheLimitAreDroppedUnderDropOldest() throws {
        _ = try enqueue([event("first", user: "u1")])
        let raw = try RawDatabase(path: path)
        try insertForeignRows(raw, count: 4_000)
        let limit: Int64 = 256 * 1024
        try withAdmin { admin throws in
            try admin.recordLimits(QueueLimits(maxQueueBytes: limit, whenFull: .dropOldest))
            #expect(try admin.queueBytes() > 3 * limit)
            let result = try admin.enforceLimits()
            #expect(result.dropped > 0 && !result.overLimit)
            #expect(result.queueBytes <= limit && result.fileBytes <= limit, "\(result)")
            // No more dropped than needed, nearly: what is left fills most of the limit (`DropPace`).
            #expect(result.queueBytes > limit * 3 / 4, "\(result)")
            #expect(try admin.drops() == QueueDrops(oldest: Int64(result.dropped)))
            let kept = try admin.stats().pending
            #expect(kept + result.dropped == 4_001)
        }
        let span = try raw.rows("SELECT min(id), max(id), count(*) FROM records")
        #expect(span.first?[1] == "4001", "the newest record is kept: \(span)")
    }

    /// Under refuse, what was accepted is never given up: the file stays over the limit until deliveries make room.
    @Test func foreignRowsPastTheLimitAreKeptUnderRefuse() throws {
        _ = try enqueue([event("first", user: "u1")])
        let raw = try RawDatabase(path: path)
        try insertForeignRows(raw, count: 4_000)
        try withAdmin { admin throws in
            try admin.recordLimits(QueueLimits(maxQueueBytes: 256 * 1024, whenFull: .refuse))
            let result = try admin.enforceLimits()
            #expect(result.dropped == 0 && result.overLimit)
            #expect(try admin.stats().pending == 4_001)
            #expect(try admin.drops() == QueueDrops())
        }
    }

    func insertForeignRows(_ raw: RawDatabase, count: Int) throws {
        try raw.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count))
            INSERT INTO records (kind, payload)
            SELECT 'event', json_object('external_id', 'f' || (i % 20), 'name', 'foreign',
                'properties', json_object('pad', printf('%.200c', 'x'), 'i', i)) FROM n
            """)
    }
}
