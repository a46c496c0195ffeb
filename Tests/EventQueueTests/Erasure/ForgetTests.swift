import Testing

@testable import EventQueue

/// `forget` (issue 31): every record of one user goes in one transaction, whatever its state, with the keys the
/// file remembers for them; nothing of another user moves; a Braze delete is queued as an erasure row of the user's
/// own stream that names the leases in flight.
@Suite struct ForgetTests: QueueFileSuite {
    let directory = Scratch()

    /// u1: two pending, one leased, one dead, one delivered with a key; u2: two pending.
    private func queueOfTwoUsers(consumer: QueueConsumer) throws -> (leased: Claim, u2: [Int64]) {
        let delivered = try enqueue([event("delivered", user: "u1", key: "k-u1")])
        let first = try consumer.claim(limit: 1, leaseMilliseconds: 60_000)
        #expect(first.records.map(\.id) == delivered)
        #expect(try consumer.ack(delivered, lease: first.lease) == 1)
        let inFlight = try enqueue([event("in-flight", user: "u1")])
        let leased = try consumer.claim(limit: 1, leaseMilliseconds: 60_000)
        #expect(leased.records.map(\.id) == inFlight)
        let u2 = try enqueue([event("a", user: "u2"), event("b", user: "u2")])
        _ = try enqueue([event("p1", user: "u1", key: "k-p1"), event("p2", user: "u1")])
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        _ = try writer.batch { batch in try batch.deadLetter(event("gone", user: "u1"), reason: "test") }
        return (leased, u2)
    }

    @Test func forgetRemovesEveryRecordOfTheUserInEveryStateAndNothingElse() throws {
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let (leased, u2) = try queueOfTwoUsers(consumer: consumer)
        let raw = try RawDatabase(path: path)
        let keysBefore = try raw.scalar("SELECT count(*) FROM delivered_user_keys WHERE user_key = 'external_id:u1'")
        #expect(keysBefore == "1")

        let report = try forget(.externalID("u1"))
        #expect(report.pending == 2 && report.leased == 1 && report.dead == 1 && report.removed == 4)
        #expect(report.rememberedKeys >= 1, "the delivered record's key: \(report)")
        #expect(report.erasureIDs.isEmpty && report.waitsFor.isEmpty)
        #expect(report.scrub.bytesGone, "\(report.scrub)")
        #expect(try raw.scalar("SELECT count(*) FROM records WHERE user_key = 'external_id:u1'") == "0")
        #expect(try raw.scalar("SELECT count(*) FROM delivered_user_keys WHERE user_key = 'external_id:u1'") == "0")
        #expect(try raw.scalar("SELECT count(*) FROM delivered_keys WHERE idempotency_key = 'k-u1'") == "0")
        #expect(try consumer.admin.peek(limit: 100).map(\.id) == u2, "u2's records stay, pending")
        #expect(try consumer.admin.deadLetters().isEmpty)
        // The forgotten record in flight: its late ack deletes nothing and remembers no key.
        #expect(try consumer.ack(leased.records.map(\.id), lease: leased.lease) == 0)
        #expect(try raw.scalar("SELECT count(*) FROM delivered_user_keys WHERE user_key = 'external_id:u1'") == "0")
    }

    @Test func aForgottenRecordInFlightIsNeitherRetriedNorDeadLetteredByItsLateAnswer() throws {
        _ = try enqueue([event("x", user: "u1"), event("y", user: "u2")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        var lease = claim.lease
        #expect(claim.records.count == 2)
        let report = try forget(.externalID("u1"))
        #expect(report.leased == 1 && report.waitsFor.isEmpty, "no Braze delete, nothing to wait for")
        let u1 = claim.records.filter { $0.userKey == "external_id:u1" }.map(\.id)
        let nack = try consumer.nack(u1, lease: claim.lease, reason: "503", retryAt: 0, maxAttempts: 1)
        #expect(nack.retried.isEmpty && nack.dead.isEmpty)
        #expect(try consumer.reject(u1, lease: claim.lease, reason: "400") == 0)
        #expect(try consumer.renew(&lease, ids: claim.records.map(\.id), leaseMilliseconds: 60_000) == 1)
        #expect(try consumer.admin.stats().dead == 0)
        #expect(try consumer.admin.peek().map(\.payload).allSatisfy { $0.contains(#""external_id":"u2""#) })
        #expect(try consumer.admin.peek().count == 1)
    }

    @Test func brazeDeleteQueuesOneErasureInTheUsersStreamNamingTheLeasesInFlight() throws {
        _ = try enqueue([event("x", user: "u1"), event("y", user: "u1")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 1, leaseMilliseconds: 60_000)
        let report = try forget(.externalID("u1"), brazeDelete: true)
        #expect(report.leased == 1 && report.pending == 1)
        #expect(report.waitsFor == [claim.lease.token])
        let id = try #require(report.erasureIDs.first)
        let raw = try RawDatabase(path: path)
        let row = try #require(try raw.rows("SELECT kind, payload, user_key, state, erasure FROM records").first)
        #expect(row[0] == "attribute" && row[1] == #"{"external_id":"u1"}"# && row[2] == "external_id:u1")
        #expect(row[3] == "pending")
        let erasure = try #require(row[4].flatMap(Erasure.init(json:)))
        #expect(erasure.type == .externalIDs && erasure.after == [claim.lease.token])
        let key = try ErasureKey.forVerifying(queuePath: path).get()
        #expect(
            key.verifies(erasure.grant, id: id, type: .externalIDs, userKey: "external_id:u1"),
            "the grant of an admin's forget")
        #expect(!key.verifies(erasure.grant, id: id + 1, type: .externalIDs, userKey: "external_id:u1"))
        let peeked = try consumer.admin.peek()
        #expect(peeked.map(\.id) == [id] && peeked.first?.erasure?.type == .externalIDs)
        let stats = try consumer.admin.stats(includingErasures: true)
        #expect(stats.erasuresPending == 1 && stats.erasuresDead == 0)
    }

    @Test func aSecondForgetKeepsTheFirstErasure() throws {
        let admin = try QueueAdmin(path: try createdQueue())
        defer { admin.close() }
        let first = try forget(.externalID("u1"), brazeDelete: true)
        let second = try forget(.externalID("u1"), brazeDelete: true)
        #expect(first.erasuresKept == 0 && second.erasuresKept == 1 && second.removed == 0)
        #expect(try admin.peek().compactMap(\.erasure).count == 2)
        #expect(try forget(.externalID("u1")).erasuresKept == 2, "without a Braze delete too")
    }

    @Test(arguments: [
        UserIdentity.alias(name: "n:1", label: "crm"), .email("a@example.com"), .phone("+15555550100"),
        .brazeID("b-1"),
    ])
    func forgetMatchesRecordsAsTheQueueFilesThem(user: UserIdentity) throws {
        _ = try enqueue([
            Record.event("e", user: user), Record.event("e", user: .externalID("other")),
        ])
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let report = try writer.forget([user], brazeDelete: true)
        #expect(report.pending == 1)
        let raw = try RawDatabase(path: path)
        let keys = try raw.rows("SELECT user_key, erasure IS NOT NULL FROM records ORDER BY id")
        #expect(keys.map { $0[0] } == ["external_id:other", user.orderingKey])
        #expect(keys.map { $0[1] } == ["0", "1"])
        let column = try #require(try raw.scalar("SELECT erasure FROM records WHERE erasure IS NOT NULL"))
        let erasure = try #require(Erasure(json: column))
        #expect(erasure.type == Erasure.IdentifierType(user))
        let payload = try #require(try raw.scalar("SELECT payload FROM records WHERE erasure IS NOT NULL"))
        #expect(try erasure.user(payload: payload).get() == user)
    }

    @Test func brazeDeleteRefusesAnIdentifierBrazeCouldNotTakeAndWritesNothing() throws {
        _ = try enqueue([event("x", user: "u1")])
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        #expect(throws: QueueError.self) { try forget(.externalID(""), brazeDelete: true) }
        #expect(try admin.peek().count == 1)
    }

    @Test func aWriterOnASchemaSixFileForgetsButRefusesTheBrazeDelete() throws {
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        try connection.execute("PRAGMA auto_vacuum = INCREMENTAL", operation: "test")
        _ = try connection.scalarText("PRAGMA journal_mode = WAL", operation: "test")
        try Migrations.migrate(connection, to: 6)
        try connection.execute(
            #"INSERT INTO records (kind, payload) VALUES ('event', '{"external_id":"u1","name":"old"}')"#,
            operation: "test")
        connection.close()
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(throws: QueueError.erasureNeedsNewerSchema(path: path, fileVersion: 6)) {
            try writer.forget([.externalID("u1")], brazeDelete: true)
        }
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "1", "refused: nothing was written")
        #expect(try raw.scalar("PRAGMA user_version") == "6")
        #expect(try writer.forget([.externalID("u1")]).pending == 1)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "0")
        #expect(try raw.scalar("PRAGMA user_version") == "6", "a writer never migrates")
    }

    @Test func deadRetryRevivesADeadErasureAndPurgeRemovesIt() throws {
        let admin = try QueueAdmin(path: try createdQueue())
        defer { admin.close() }
        let id = try #require(try forget(.alias(name: "n", label: "l"), brazeDelete: true).erasureIDs.first)
        let raw = try RawDatabase(path: path)
        try raw.execute(
            "UPDATE records SET state = 'dead', dead_at_ms = 1, last_error = 'Braze said 400' WHERE id = \(id)")
        #expect(try admin.deadLetters().first?.erasure?.type == .userAliases)
        #expect(try admin.stats(includingErasures: true).erasuresDead == 1)
        let retried = try admin.retryDeadChecked(ids: nil)
        #expect(retried.retried == [id] && retried.stillInvalid.isEmpty, "no Braze record check for an erasure")
        try raw.execute("UPDATE records SET state = 'dead', dead_at_ms = 1 WHERE id = \(id)")
        #expect(try admin.purgeDead(ids: [id]) == [id])
        #expect(try admin.stats(includingErasures: true).erasuresDead == 0)
    }

    @Test func salvageCarriesAnErasureAsAnErasure() throws {
        let admin = try QueueAdmin(path: try createdQueue())
        _ = try forget(.externalID("u1"), brazeDelete: true)
        admin.close()
        let copy = directory.file("salvaged.db")
        let report = try QueueSalvage.run(from: path, to: copy)
        #expect(report.recoveredPending == 1, "\(report)")
        let raw = try RawDatabase(path: copy)
        let column = try #require(try raw.scalar("SELECT erasure FROM records"))
        #expect(Erasure(json: column)?.type == .externalIDs)
    }

    /// `QueueWriter.forget` of one user, on a connection of its own.
    private func forget(_ user: UserIdentity, brazeDelete: Bool = false) throws -> ForgetReport {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        return try writer.forget([user], brazeDelete: brazeDelete)
    }

    /// A queue file with nothing in it.
    private func createdQueue() throws -> String {
        try QueueWriter(path: path).close()
        return path
    }
}
