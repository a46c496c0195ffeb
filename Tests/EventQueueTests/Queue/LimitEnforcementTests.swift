import Testing

@testable import EventQueue

/// The daemon's side of the limits (issue 30 #4 and #5, `QueueAdmin.enforceLimits`), on clocks the test sets
/// (`now`, the wall clock; `boot`, the monotonic clock the queue clock advances by): pending records past the max age become dead letters whose reason begins with `expired` (never a
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

    /// The boot clock at `milliseconds` of one simulated boot: what the queue clock advances by.
    static func boot(_ milliseconds: Int64, id: String = "boot-1") -> () -> BootClockReading {
        { BootClockReading(bootID: id, milliseconds: milliseconds) }
    }

    @Test func pendingRecordsPastTheMaxAgeBecomeExpiredDeadLetters() throws {
        let ids = try enqueue((0..<10).map { event("e\($0)", user: "u\($0 % 3)") })
        let raw = try RawDatabase(path: path)
        let enqueuedAt = try createdAt(raw)
        try withAdmin { admin throws in
            try admin.recordLimits(QueueLimits(maxAgeSeconds: 60))
            // The first enforcement sees the records (a checkpoint): their age counts from it.
            #expect(try admin.enforceLimits(now: enqueuedAt, boot: Self.boot(1_000)).expired == 0)
            #expect(try admin.enforceLimits(now: enqueuedAt + 59_000, boot: Self.boot(60_000)).expired == 0)
            #expect(try admin.stats().pending == 10)
            let result = try admin.enforceLimits(now: enqueuedAt + 61_000, boot: Self.boot(62_000))
            #expect(result.expired == 10)
            #expect(try admin.drops() == QueueDrops(expired: 10))
            let dead = try admin.deadLetters()
            #expect(dead.map(\.id) == ids, "kept as dead letters, none deleted")
            for letter in dead {
                #expect(letter.lastError == "expired: enqueued at least 61 s ago, max age 60 s", "\(letter)")
                #expect(letter.deadAtMilliseconds == enqueuedAt + 61_000)
            }
            // Nothing more to expire: the count does not grow.
            #expect(try admin.enforceLimits(now: enqueuedAt + 120_000, boot: Self.boot(121_000)).expired == 0)
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
            #expect(try admin.enforceLimits(now: enqueuedAt, boot: Self.boot(0)).expired == 0)
            #expect(try admin.enforceLimits(now: enqueuedAt + 10_000, boot: Self.boot(10_000)).expired == 2)
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
            #expect(try admin.enforceLimits(now: enqueuedAt, boot: Self.boot(0)).expired == 0)
            #expect(try admin.enforceLimits(now: enqueuedAt + 5_000, boot: Self.boot(5_000)).expired == 1)
            #expect(try admin.retryDeadChecked(ids: ids).retried == ids)
            #expect(try admin.enforceLimits(now: enqueuedAt + 6_000, boot: Self.boot(6_000)).expired == 0)
        }
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 1, leaseMilliseconds: 60_000, now: enqueuedAt + 7_000)
        _ = try consumer.nack(
            ids, lease: claim.lease, reason: "HTTP 503", retryAt: enqueuedAt + 8_000, now: enqueuedAt + 7_000)
        try withAdmin { admin throws in
            #expect(try admin.enforceLimits(now: enqueuedAt + 9_000, boot: Self.boot(9_000)).expired == 1)
            #expect(try admin.drops().expired == 2)
        }
    }

    /// Issue 39 #2: no clock makes a record older. Writers' clocks 8 days behind and 8 days ahead, and the
    /// daemon's wall clock stepped 8 days forward, then back, then right again, expire nothing under a limit of a
    /// week; the records expire when the monotonic clock says they waited the week.
    @Test func noWallClockMakesARecordOlderThanTheQueueClockSaysItIs() throws {
        let day: Int64 = 24 * 3_600_000
        let week = QueueLimits.defaultMaxAgeSeconds * 1000
        _ = try enqueue([event("right", user: "u1")])
        let raw = try RawDatabase(path: path)
        let now = try createdAt(raw)
        try raw.execute(
            """
            INSERT INTO records (kind, payload, created_at_ms)
            VALUES ('event', '{"external_id":"u2","name":"behind"}', \(now - 8 * day)),
                   ('event', '{"external_id":"u3","name":"ahead"}', \(now + 8 * day))
            """)
        try withAdmin { admin throws in
            try admin.recordLimits(.daemonDefault)
            var boot: Int64 = 5_000
            for wall in [now, now + 8 * day, now - 8 * day, now + 8 * day + 1, now] {
                #expect(try admin.enforceLimits(now: wall, boot: Self.boot(boot)).expired == 0, "at \(wall - now)")
                boot += 2_000
            }
            #expect(try admin.stats().pending == 3)
            // The week, by the monotonic clock (the wall clock says only a minute passed).
            let result = try admin.enforceLimits(now: now + 60_000, boot: Self.boot(5_000 + week))
            #expect(result.expired == 3)
            #expect(
                try admin.deadLetters().allSatisfy {
                    $0.lastError?.hasPrefix("expired: enqueued at least 604800 s ago") == true
                })
        }
    }

    /// The queue clock on its own: within a boot only the monotonic clock moves it; across a reboot the wall
    /// clock's difference is added, never a negative one; an idle queue's clock is not written.
    @Test func theQueueClockMovesByTheMonotonicClockAndAcrossABootByTheWallClock() throws {
        _ = try enqueue([event("e", user: "u1")])
        let raw = try RawDatabase(path: path)
        let now = try createdAt(raw)
        let day: Int64 = 24 * 3_600_000
        try withAdmin { admin throws in
            try admin.recordLimits(.daemonDefault)
            #expect(try admin.tickQueueClock(now: now, boot: Self.boot(1_000)) == 0)
            #expect(try raw.scalar("SELECT count(*) FROM queue_clock_checkpoints") == "1")
            #expect(try admin.tickQueueClock(now: now + 8 * day, boot: Self.boot(5_000)) == 4_000)
            #expect(try admin.tickQueueClock(now: now - 8 * day, boot: Self.boot(9_000)) == 8_000)
            // Idle: nothing was written since the first tick (no new id, the same boot).
            #expect(try raw.scalar("SELECT elapsed_ms || ' ' || boot_ms FROM queue_clock") == "0 1000")
            #expect(try raw.scalar("SELECT count(*) FROM queue_clock_checkpoints") == "1")
            // New ids: a checkpoint, but at most one a minute (a 1440th of the max age when that is longer).
            _ = try enqueue([event("e2", user: "u2")])
            #expect(try admin.tickQueueClock(now: now, boot: Self.boot(30_000)) == 29_000)
            #expect(try raw.scalar("SELECT count(*) FROM queue_clock_checkpoints") == "1")
            #expect(try admin.tickQueueClock(now: now, boot: Self.boot(421_000)) == 420_000)
            #expect(
                try raw.scalar("SELECT group_concat(elapsed_ms || ':' || max_id) FROM queue_clock_checkpoints")
                    == "0:1,420000:2")
            // A reboot an hour (by the wall clock) after the clock was last written (its wall time then: `now`
            // plus the 420 s the monotonic clock counted since `now`): the hour is counted.
            #expect(
                try admin.tickQueueClock(now: now + 420_000 + 3_600_000, boot: Self.boot(100, id: "boot-2"))
                    == 4_020_000)
            // A reboot whose wall clock is behind the last one: nothing is added, and nothing is taken away.
            #expect(try admin.tickQueueClock(now: now - 8 * day, boot: Self.boot(50, id: "boot-3")) == 4_020_000)
            #expect(try admin.tickQueueClock(now: now - 8 * day, boot: Self.boot(1_050, id: "boot-3")) == 4_021_000)
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
