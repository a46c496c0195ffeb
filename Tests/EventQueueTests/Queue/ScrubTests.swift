import Glibc
import Testing

@testable import EventQueue

/// No byte of a removed record stays readable in the queue file or its WAL (issue 31, point 2): the raw bytes of
/// both files are searched for canaries (e-mail addresses) after `forget`, and after delivery and the upkeep.
///
/// The hazard is real with secure deletion on: a claim's UPDATE grows a row, a b-tree balance moves cells to a
/// sibling page and rebuilds the page without zeroing the gap it leaves (SQLite's `rebuildPage`), so a stale copy
/// of the cell survives the row's deletion. Each test first checks that its scenario leaves such a copy when only
/// rows are deleted and the WAL checkpointed, so that it proves the scrub and not a lucky layout.
@Suite struct ScrubTests: QueueFileSuite {
    let directory = Scratch()

    /// `count` attribute records with a canary address each (users `c0`... or all `user`), each followed by a
    /// dead letter of another user: the shapes of the measurement in issue 31.
    private func fill(_ count: Int, user: String? = nil, canary: String = "canary") throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        try writer.batch { batch in
            for index in 0..<count {
                let attributes: JSONObject = [
                    "email": .string("\(canary)-\(index)@example.com"),
                    "first_name": .string(String(repeating: "x", count: 40)),
                ]
                _ = try batch.enqueue(Record.attributes(attributes, user: .externalID(user ?? "c\(index)")))
                _ = try batch.deadLetter(
                    Record.attributes(
                        ["bad": .string(String(repeating: "y", count: 300))], user: .externalID("d\(index)")),
                    reason: "bad must be at most 255 characters")
            }
        }
    }

    /// How many distinct canaries (`prefix-N@`) the files hold, read as raw bytes.
    private func canaries(_ prefix: String, in paths: [String]) throws -> Set<String> {
        var found: Set<String> = []
        let needle = Array((prefix + "-").utf8)
        for path in paths where access(path, F_OK) == 0 {
            let bytes = try fileBytes(path)
            var index = 0
            while index + needle.count <= bytes.count {
                if bytes[index] == needle[0], Array(bytes[index..<index + needle.count]) == needle {
                    var end = index + needle.count
                    while end < bytes.count, bytes[end] >= 0x30, bytes[end] <= 0x39 { end += 1 }
                    found.insert(String(decoding: bytes[index..<end], as: UTF8.self))
                    index = end
                } else {
                    index += 1
                }
            }
        }
        return found
    }

    /// The premise: a copy of the file and its WAL, checkpointed into one file without a `VACUUM` (rows deleted with
    /// secure deletion, nothing more), still holds canaries.
    private func canariesWithoutTheScrub(_ prefix: String) throws -> Set<String> {
        let copy = try copyOfTheQueue("copy-\(prefix).db")
        do {
            let raw = try RawDatabase(path: copy)
            _ = try raw.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return try canaries(prefix, in: [copy, copy + "-wal"])
    }

    @Test func deliveredRecordsLeaveNoAddressInTheFileOrItsWALAfterTheUpkeep() throws {
        try fill(300)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        while true {
            let claim = try consumer.claim(limit: 100, leaseMilliseconds: 60_000)
            if claim.records.isEmpty { break }
            #expect(try consumer.ack(claim.records.map(\.id), lease: claim.lease) == claim.records.count)
        }
        #expect(try consumer.admin.stats().pending == 0)
        let left = try canariesWithoutTheScrub("canary")
        #expect(!left.isEmpty, "the scenario must leave a stale copy when rows are only deleted")

        let upkeep = try consumer.admin.checkpointAndVacuum()
        #expect(upkeep.checkpointComplete)
        let after = try canaries("canary", in: [path, path + "-wal"])
        #expect(after.isEmpty, "readable after delivery and upkeep: \(after.sorted().prefix(5))")
        #expect(try consumer.admin.deadLetters().count == 300, "dead letters stay")
    }

    @Test func forgetLeavesNoByteOfTheUsersRecordsInTheFileOrItsWAL() throws {
        try fill(300, user: "victim")
        try fill(150, canary: "keeper")
        // A fixed consumer id: the lease token's length decides how much a claim grows a row, so a random one made
        // the layout, and whether the scenario leaves a stale copy (the premise below), differ from run to run.
        let consumer = try QueueConsumer(path: path, consumerID: "scrub-test:4242:5eed@1")
        defer { consumer.close() }
        // The victim's records are claimed as a drain claims them (each claim's UPDATE grows the rows: cells move),
        // some sent back for a retry, the rest still in flight when the forget runs; the others are handed back.
        var inFlight = 0
        for round in 0..<3 {
            let claim = try consumer.claim(limit: 1_000, leaseMilliseconds: 60_000)
            let victim = claim.records.filter { $0.userKey == "external_id:victim" }.map(\.id)
            _ = try consumer.release(
                claim.records.filter { $0.userKey != "external_id:victim" }.map(\.id), lease: claim.lease)
            if round == 0 {
                _ = try consumer.nack(
                    victim, lease: claim.lease,
                    reason: "HTTP 503 from Braze: " + String(repeating: "upstream connect error; ", count: 8),
                    retryAt: 0)
            } else {
                inFlight += victim.count
            }
        }
        #expect(inFlight > 0)
        #expect(!(try canariesWithoutTheScrubAfterDeleting("victim")).isEmpty, "the scenario leaves stale copies")

        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let report = try writer.forget([.externalID("victim")])
        #expect(report.removed == 300 && report.leased > 0, "\(report)")
        #expect(report.scrub.bytesGone)
        let after = try canaries("canary", in: [path, path + "-wal"])
        #expect(after.isEmpty, "readable after forget: \(after.sorted().prefix(5))")
        #expect(!(try canaries("keeper", in: [path, path + "-wal"])).isEmpty, "another user's records stay")
    }

    /// Issue 40 #3: a file that cannot be rebuilt within a quarter of the forgetter's busy timeout is not rebuilt
    /// (writers never wait longer than that); the scrub is owed, `stats` shows it, and the upkeep of a connection
    /// whose bound fits rebuilds the file and clears it.
    @Test func aScrubTooLargeForTheBoundIsOwedShownAndDoneByTheUpkeep() throws {
        try fill(300, user: "victim")
        try fill(150, canary: "keeper")
        // A quarter of 4 ms is 1 ms: too short to copy this file's live pages at `assumedBytesPerSecond`.
        let writer = try QueueWriter(path: path, options: QueueOptions(busyTimeoutMilliseconds: 4))
        let report = try writer.forget([.externalID("victim")])
        writer.close()
        #expect(report.removed == 300 && !report.scrub.vacuumed && !report.scrub.bytesGone, "\(report.scrub)")
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        let owed = try #require(try admin.stats().scrubOwedSinceMilliseconds, "status shows the scrub owed")
        #expect(abs(owed - WallClock.nowMilliseconds()) < 600_000)
        #expect(try admin.checkpointAndVacuum().checkpointComplete)
        #expect(try admin.stats().scrubOwedSinceMilliseconds == nil, "the upkeep rebuilt the file and cleared it")
        let after = try canaries("canary", in: [path, path + "-wal"])
        #expect(after.isEmpty, "readable after the upkeep: \(after.sorted().prefix(5))")
        #expect(!(try canaries("keeper", in: [path, path + "-wal"])).isEmpty, "another user's records stay")
    }

    /// The bound is enforced, not only estimated: a `VACUUM` past its budget is interrupted and rolled back.
    @Test func aVacuumPastItsBudgetIsGivenUpAndTheFileIsUnchanged() throws {
        try fill(300)
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let connection = writer.file.connection
        let pages = try connection.scalarInt("PRAGMA page_count", operation: "test")
        #expect(try !connection.vacuum(operation: "test", inMemory: true, budgetNanoseconds: 0))
        #expect(try connection.scalarInt("PRAGMA page_count", operation: "test") == pages)
        #expect(try connection.scalarInt("SELECT count(*) FROM records", operation: "test") == 600)
        #expect(try connection.vacuum(operation: "test", inMemory: true, budgetNanoseconds: 60_000_000_000))
    }

    /// A forget that ran after a `VACUUM` began (its mark made new) keeps its mark: that `VACUUM` did not scrub it.
    @Test func aMarkMadeAfterTheVacuumBeganIsKept() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        try QueueScrub.markOwed(path)
        writer.file.scrubMarkBeforeVacuum = QueueScrub.markToken(path)
        try QueueScrub.markOwed(path)
        QueueScrub.clearMark(writer.file)
        #expect(QueueScrub.owedSinceMilliseconds(path) != nil)
        #expect(try QueueScrub.run(writer.file).bytesGone)
        #expect(QueueScrub.owedSinceMilliseconds(path) == nil)
    }

    /// The premise for `forget`: the victim's rows deleted in a copy with secure deletion, checkpointed, no VACUUM.
    private func canariesWithoutTheScrubAfterDeleting(_ user: String) throws -> Set<String> {
        let copy = try copyOfTheQueue("copy-forget.db")
        do {
            let raw = try RawDatabase(path: copy)
            try raw.execute("PRAGMA secure_delete = ON")
            try raw.execute("DELETE FROM records WHERE user_key = 'external_id:\(user)'")
            _ = try raw.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return try canaries("canary", in: [copy, copy + "-wal"])
    }

    /// The queue file and its WAL copied byte for byte (the original's connections stay open).
    private func copyOfTheQueue(_ name: String) throws -> String {
        let copy = directory.file(name)
        for suffix in ["", "-wal"] where access(path + suffix, F_OK) == 0 {
            let bytes = try fileBytes(path + suffix)
            let fd = open(copy + suffix, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        return copy
    }
}
