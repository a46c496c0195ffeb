import Testing

@testable import EventQueue

@Suite struct WriterTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    @Test func enqueueStoresTheBrazeObjectWithTheEnqueueTime() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let before = WallClock.nowMilliseconds()
        let id = try writer.enqueue(Record.event("song_liked", user: .externalID("u1"), properties: ["song": "x"]))
        let after = WallClock.nowMilliseconds()
        let raw = try RawDatabase(path: path)
        let row = try raw.rows("SELECT kind, payload, created_at_ms, state, user_key FROM records WHERE id = \(id)")
        let created = try #require(row.first?[2].flatMap { Int64($0) })
        #expect(created >= before && created <= after)
        #expect(row.first?[0] == "event")
        #expect(row.first?[3] == "pending")
        #expect(row.first?[4] == "external_id:u1")
        let payload = try #require(row.first?[1])
        let time = ISO8601.format(unixMilliseconds: created)
        #expect(
            payload == #"{"external_id":"u1","name":"song_liked","properties":{"song":"x"},"time":""# + time + #""}"#)
    }

    @Test func invalidRecordWritesNothingAndNamesTheField() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        do {
            try writer.enqueue(Record.event("", user: .externalID("u1")))
            Issue.record("an empty event name must be refused")
        } catch {
            guard case .invalidRecord(let validation) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(validation.field == "name")
        }
        #expect(try RawDatabase(path: path).scalar("SELECT count(*) FROM records") == "0")
    }

    @Test func batchIsAllOrNothingAndNamesTheIndex() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        try writer.enqueue(event("before", user: "u0"))
        let batch = [event("a", user: "u1"), event("b", user: "u2"), Record.event("", user: .externalID("u3"))]
        do {
            try writer.enqueue(contentsOf: batch)
            Issue.record("the batch must be refused")
        } catch {
            guard case .invalidRecord(let validation) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(validation.index == 2)
            #expect(validation.description.hasPrefix("record 2: "))
        }
        #expect(try RawDatabase(path: path).scalar("SELECT count(*) FROM records") == "1")
    }

    @Test func idempotencyKeyReturnsTheFirstIdAndWritesOnce() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let first = try writer.enqueue(event("a", user: "u1", key: "k-1"))
        let second = try writer.enqueue(event("a", user: "u1", key: "k-1"))
        #expect(first == second)
        // A different record under the same user's key is refused, not taken for a retry (issue 22 #6).
        #expect(throws: QueueError.idempotencyKeyReused(key: "k-1", userKey: "external_id:u1", existingID: first)) {
            try writer.enqueue(event("a-again", user: "u1", key: "k-1"))
        }
        let other = try writer.enqueue(event("b", user: "u1", key: "k-2"))
        #expect(other != first)
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "2")
        #expect(try raw.scalar("SELECT payload FROM records WHERE id = \(first)")?.contains("\"a\"") == true)
    }

    @Test func idempotencyKeyIsRememberedAfterDelivery() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let first = try writer.enqueue(event("a", user: "u1", key: "k-1"))
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 1_000)
        try consumer.ack(claim.records.map(\.id), lease: claim.lease)
        #expect(try writer.enqueue(event("a", user: "u1", key: "k-1")) == first)
        #expect(try consumer.admin.stats().pending == 0)
    }

    @Test func idempotencyKeyMustBeReasonable() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(throws: QueueError.invalidIdempotencyKey("")) { try writer.enqueue(event("a", user: "u", key: "")) }
    }

    @Test func purchaseGetsTheDefaultQuantity() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        var record = Record.purchase(
            productID: "p1", currency: "USD", price: JSONNumber(text: "9.99") ?? JSONNumber(0), user: .externalID("u"))
        record.object["quantity"] = nil
        let id = try writer.enqueue(record)
        let payload = try RawDatabase(path: path).scalar("SELECT payload FROM records WHERE id = \(id)")
        #expect(payload?.contains(#""quantity":1"#) == true)
        #expect(payload?.contains(#""price":9.99"#) == true)
    }

    @Test func sqlLookingStringsAreStoredByteForByte() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let sqlish = "u'); DROP TABLE records; --"
        let hostile = "'); DROP TABLE records; -- \u{0} \"quoted\" \\ ✓"
        let id = try writer.enqueue(Record.event("e", user: .externalID(sqlish), properties: ["q": .string(hostile)]))
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 1, leaseMilliseconds: 1_000)
        #expect(claim.records.first?.id == id)
        let object = try JSONValue.parse(try #require(claim.records.first?.payload)).objectValue
        #expect(object?["external_id"] == .string(sqlish))
        #expect(object?["properties"]?.objectValue?["q"] == .string(hostile))
    }

    @Test func diskReserveRefusesNewRecordsWithAClearError() throws {
        let writer = try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: Int64.max))
        defer { writer.close() }
        do {
            try writer.enqueue(event("a", user: "u1"))
            Issue.record("an impossible reserve must refuse the record")
        } catch {
            #expect(error.description.hasPrefix("queue disk full"))
        }
    }
}
