import Testing

@testable import EventQueue

/// The size limit in the writer's own transaction (issue 30 #5, `SpaceKeeper`): `refuse` stores nothing past the
/// limit and counts the refusal for good; `drop-oldest` drops the oldest dead letters, then the oldest pending
/// records (never leased ones, never erasures) so the new record fits; batches follow the same rules.
@Suite struct SizeLimitTests: QueueFileSuite {
    let directory = Scratch()
    /// 256 KiB: an empty queue takes about 90 KB, so about 600 of these records fit.
    static let limit: Int64 = 256 * 1024
    static let fast = QueueOptions(durability: .normal, minimumFreeBytes: 0)

    static func record(_ index: Int, user: String? = nil) -> Record {
        Record.event(
            "e\(index)", user: .externalID(user ?? "u\(index % 20)"),
            properties: ["pad": .string(String(repeating: "x", count: 200)), "i": .number(JSONNumber(index))])
    }

    func setLimits(_ policy: QueueLimits.WhenFull, maxBytes: Int64 = Self.limit) throws {
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        try admin.recordLimits(QueueLimits(maxQueueBytes: maxBytes, whenFull: policy))
    }

    func admin<T>(_ body: (QueueAdmin) throws -> T) throws -> T {
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        return try body(admin)
    }

    @Test func refuseStoresNothingPastTheLimitAndCountsEachRefusal() throws {
        try setLimits(.refuse)
        let writer = try QueueWriter(path: path, options: Self.fast)
        defer { writer.close() }
        var stored: [Int64] = []
        var refusal: QueueError?
        for index in 0..<5_000 {
            do {
                stored.append(try writer.enqueue(Self.record(index)))
            } catch {
                refusal = error
                break
            }
        }
        guard case .queueFull(_, let limit, _)? = refusal else {
            Issue.record("expected queueFull, got \(String(describing: refusal)) after \(stored.count)")
            return
        }
        #expect(limit == Self.limit)
        let message = refusal?.description ?? ""
        #expect(message.hasPrefix("queue full: \(path): this record would take it to "), "\(message)")
        #expect(message.contains("past its limit of 262144 bytes (queued --max-queue-bytes, --when-full refuse)"))
        #expect(message.contains("nothing was written"))
        #expect(stored.count > 300, "\(stored.count) records fit")
        // Another one is refused too, and counted.
        #expect(throws: QueueError.self) { try writer.enqueue(Self.record(99_999)) }
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == String(stored.count))
        #expect(try raw.scalar("SELECT max(id) FROM records") == String(stored.last ?? 0))
        try admin { admin throws in
            #expect(try admin.drops() == QueueDrops(refused: 2))
            #expect(try admin.queueBytes() <= Self.limit)
        }
    }

    /// Dead letters go first even when they are newer than pending records; then the oldest pending records; a
    /// leased record and an erasure are never dropped; the newest record is always kept.
    @Test func dropOldestGivesUpDeadLettersFirstThenPendingNeverLeasedOrErasures() throws {
        let raw = try RawDatabase(path: path)
        let writer = try QueueWriter(path: path, options: Self.fast)
        defer { writer.close() }
        let oldPending = try writer.enqueue(contentsOf: (0..<60).map { Self.record($0, user: "old\($0)") })
        let dead = try writer.batch { batch in
            try (0..<200).map { try batch.deadLetter(Self.record($0), reason: "set aside").id }
        }
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let leased = try consumer.claim(limit: 3, leaseMilliseconds: 600_000).records.map(\.id)
        #expect(leased == Array(oldPending.prefix(3)))
        // An erasure (issue 31's row: the user's own stream), older than every record written from here on.
        try raw.execute(
            """
            INSERT INTO records (kind, payload, erasure)
            VALUES ('attribute', '{"external_id":"gone"}', '{"type":"external_ids","after":[]}')
            """)
        let erasure = try Int64(raw.scalar("SELECT max(id) FROM records") ?? "") ?? 0
        let used = try admin { try $0.queueBytes() }
        try setLimits(.dropOldest, maxBytes: used + 8 * 4096)
        func droppedSoFar() throws -> Int64 {
            try Int64(raw.scalar("SELECT count FROM queue_drops WHERE cause = 'oldest'") ?? "") ?? -1
        }

        // Fill until the first drop: only dead letters went, although they are newer than the old pending ones.
        var index = 0
        var newest: Int64 = 0
        while try droppedSoFar() == 0 {
            newest = try writer.enqueue(Self.record(1_000 + index))
            index += 1
        }
        let deadLeft = try Int(raw.scalar("SELECT count(*) FROM records WHERE state = 'dead'") ?? "") ?? -1
        #expect(deadLeft == 200 - Int(try droppedSoFar()), "only dead letters dropped first")
        #expect(
            try raw.scalar(
                "SELECT count(*) FROM records WHERE id IN (\(oldPending.map(String.init).joined(separator: ",")))")
                == "60")

        // Fill much further: every dead letter, then the oldest pending records go.
        for _ in 0..<3_000 {
            newest = try writer.enqueue(Self.record(1_000 + index))
            index += 1
        }
        let ids = Set(try raw.rows("SELECT id FROM records").compactMap { $0[0].flatMap { Int64($0) } })
        #expect(ids.contains(erasure), "the erasure is kept")
        #expect(Set(leased).isSubset(of: ids), "leased records are kept")
        #expect(ids.contains(newest), "the newest record is kept")
        #expect(dead.allSatisfy { !ids.contains($0) }, "every dead letter went first")
        // What is left of the pending records is the newest ones: the dropped ones are a prefix in id order.
        let pendingKept = try raw.rows("SELECT id FROM records WHERE state = 'pending' AND erasure IS NULL ORDER BY id")
            .compactMap { $0[0].flatMap { Int64($0) } }
        let firstKept = try #require(pendingKept.first)
        let written = oldPending + (1...newest).filter { $0 > erasure }
        let droppedPending = written.filter { !leased.contains($0) && $0 < firstKept }
        #expect(droppedPending.allSatisfy { !ids.contains($0) })
        let total = try admin { try $0.drops() }
        #expect(total.oldest == Int64(200 + droppedPending.count), "every drop counted: \(total)")
        #expect(total.refused == 0)
        #expect(try admin { try $0.queueBytes() } <= used + 8 * 4096)
    }

    /// `enqueue(contentsOf:)` is all or nothing: a batch that does not fit is refused whole, every record counted.
    @Test func aBatchThatDoesNotFitIsRefusedWholeAndCounted() throws {
        try setLimits(.refuse)
        let writer = try QueueWriter(path: path, options: Self.fast)
        defer { writer.close() }
        _ = try writer.enqueue(contentsOf: (0..<100).map { Self.record($0) })
        #expect(throws: QueueError.self) {
            try writer.enqueue(contentsOf: (100..<2_100).map { Self.record($0) })
        }
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "100")
        try admin { admin throws in #expect(try admin.drops().refused == 2_000) }
    }

    /// Issue 40 #5: a refusal counts the records it leaves unstored, once: a record already stored (its key queued
    /// by an earlier enqueue) is not counted, and records a batch's body offers after the refusal are (before: every
    /// record of `enqueue(contentsOf:)` counted, those already stored included; only a batch's rows appended).
    @Test func aRefusalCountsTheRecordsLeftUnstoredOnce() throws {
        try setLimits(.refuse)
        let writer = try QueueWriter(path: path, options: Self.fast)
        defer { writer.close() }
        func keyed(_ index: Int) -> Record {
            var record = Self.record(index)
            record.idempotencyKey = "k\(index)"
            return record
        }
        _ = try writer.enqueue(contentsOf: (0..<100).map(keyed))
        #expect(throws: QueueError.self) {
            try writer.enqueue(contentsOf: (0..<2_100).map(keyed))
        }
        try admin { admin throws in #expect(try admin.drops().refused == 2_000, "the 100 stored are not counted") }
        var offered = 0
        #expect(throws: QueueError.self) {
            try writer.batch { batch in
                for index in 10_000..<13_000 {
                    offered += 1
                    _ = try? batch.enqueue(Self.record(index))
                }
            }
        }
        #expect(offered == 3_000)
        try admin { admin throws in #expect(try admin.drops().refused == 2_000 + 3_000) }
    }

    /// `batch`: the first record that does not fit refuses the transaction whatever the body does with the error;
    /// the records the transaction appended are counted refused, dead letters included.
    @Test func aRefusedBatchCommitsOnlyItsCountWhateverTheBodyDoes() throws {
        struct Stop: Error {}
        try setLimits(.refuse)
        let writer = try QueueWriter(path: path, options: Self.fast)
        defer { writer.close() }
        var appended = 0
        // The body swallows the refusal and returns: the batch still throws queueFull, and nothing is stored.
        #expect(throws: QueueError.self) {
            try writer.batch { batch in
                for index in 0..<3_000 {
                    do {
                        _ =
                            try index % 10 == 0
                            ? batch.deadLetter(Self.record(index), reason: "set aside")
                            : batch.enqueue(Self.record(index))
                        appended += 1
                    } catch QueueError.queueFull {
                        break
                    }
                }
            }
        }
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "0")
        try admin { admin throws in #expect(try admin.drops().refused == Int64(appended + 1)) }
        // A body that throws its own error after the refusal: that error, and the count still commits.
        var second = 0
        #expect(throws: Stop.self) {
            try writer.batch { batch in
                for index in 0..<3_000 {
                    guard (try? batch.enqueue(Self.record(index))) != nil else { throw Stop() }
                    second += 1
                }
            }
        }
        #expect(try raw.scalar("SELECT count(*) FROM records") == "0")
        try admin { admin throws in #expect(try admin.drops().refused == Int64(appended + 1 + second + 1)) }
    }

    /// Issue 40 #5: a batch never drops its own rows under drop-oldest, so every id `enqueue(contentsOf:)` returns
    /// names a stored record. One that fits once older records go is stored whole; one three times the limit is
    /// refused whole (before: its oldest records made room for its newest, and their ids were still returned), and
    /// the file never grows past the limit on the way.
    @Test func aBatchUnderDropOldestNeverDropsItsOwnRecords() throws {
        try setLimits(.dropOldest)
        let writer = try QueueWriter(path: path, options: Self.fast)
        defer { writer.close() }
        let raw = try RawDatabase(path: path)
        // 380 a batch: about what the limit holds besides the file's own pages (schema 8's records_other_user is one
        // more), so the second fits only once older records go.
        let older = try writer.enqueue(contentsOf: (0..<380).map { Self.record($0) })
        let ids = try writer.enqueue(contentsOf: (380..<760).map { Self.record($0) })
        let stored = Set(try raw.rows("SELECT id FROM records").compactMap { $0[0].flatMap { Int64($0) } })
        #expect(ids.allSatisfy(stored.contains), "every id returned is stored")
        #expect(!older.allSatisfy(stored.contains), "older records made room")
        let before = try raw.scalar("SELECT count(*) FROM records")
        #expect(throws: QueueError.self) {
            let returned = try writer.enqueue(contentsOf: (1_000..<3_000).map { Self.record($0) })
            let now = Set(try raw.rows("SELECT id FROM records").compactMap { $0[0].flatMap { Int64($0) } })
            Issue.record("stored: \(returned.filter(now.contains).count) of the \(returned.count) ids returned")
        }
        #expect(try raw.scalar("SELECT count(*) FROM records") == before, "refused whole: nothing dropped")
        try admin { admin throws in
            #expect(try admin.drops().refused == 2_000)
            #expect(try admin.queueBytes() <= Self.limit)
        }
        let pages = try Int64(raw.scalar("PRAGMA page_count") ?? "") ?? 0
        #expect(pages * 4096 <= Self.limit + 4 * 4096, "the file itself stays at the limit: \(pages) pages")
    }

    /// With no limit recorded, or a limit of 0, nothing is measured or refused; on a file before schema 7 there is
    /// nothing to read.
    @Test func noLimitMeansNothingIsRefused() throws {
        try setLimits(.refuse, maxBytes: 0)
        let writer = try QueueWriter(path: path, options: Self.fast)
        defer { writer.close() }
        _ = try writer.enqueue(contentsOf: (0..<3_000).map { Self.record($0) })
        try admin { admin throws in
            #expect(try admin.drops() == QueueDrops())
            #expect(try admin.queueBytes() > Self.limit)
        }
    }
}
