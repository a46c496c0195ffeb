import Testing

@testable import EventQueue

/// Issue 32 #6, through the writer: a retry under the same key spelled differently (members in another order,
/// `1.0` for `1`, escapes) is a retry, queued and after delivery; a different record is still refused; and the
/// digests 1.2.0 and 1.3.0 writers stored still recognise their records' retries.
@Suite struct KeyRetrySpellingTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    func record(_ json: String) throws -> Record {
        try Record(jsonLine: json)
    }

    func deliverAll() throws {
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 1000, leaseMilliseconds: 60_000)
        try consumer.ack(claim.records.map(\.id), lease: claim.lease)
    }

    /// FNV-1a 64 of kind, NUL and text, as docs/SCHEMA.md defines it (not the code under test).
    func fnv(_ kind: String, _ text: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(kind.utf8) + [0] + Array(text.utf8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    static let first =
        #"{"type":"event","idempotency_key":"order-9","external_id":"u1","name":"checkout","properties":{"total":1,"items":[{"sku":"a","n":2}]}}"#
    static let respelled =
        #"{"properties":{"items":[{"n":2.0,"sku":"\u0061"}],"total":1e0},"name":"checkout","external_id":"u1","type":"event","idempotency_key":"order-9"}"#
    static let different =
        #"{"type":"event","idempotency_key":"order-9","external_id":"u1","name":"checkout","properties":{"total":2,"items":[{"sku":"a","n":2}]}}"#

    @Test func aRetrySpelledDifferentlyIsTheSameRecordQueuedAndAfterDelivery() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let id = try writer.enqueue(record(Self.first))
        #expect(try writer.enqueue(record(Self.respelled)) == id)
        let batch = try writer.batch { batch in try batch.enqueue(record(Self.respelled)) }
        #expect(batch == .alreadyKnown(id: id))
        // What is stored is the record as the first writer spelled it; its digest is the canonical one.
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "1")
        #expect(
            try raw.scalar("SELECT record_digest FROM records")
                == String(
                    fnv(
                        "event",
                        #"{"external_id":"u1","name":"checkout","properties":{"items":[{"n":2,"sku":"a"}],"total":1}}"#)
                ))
        try deliverAll()
        #expect(try writer.enqueue(record(Self.respelled)) == id)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "0")
    }

    @Test func aDifferentRecordUnderTheSameKeyIsStillRefused() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let id = try writer.enqueue(record(Self.first))
        let refusal = QueueError.idempotencyKeyReused(key: "order-9", userKey: "external_id:u1", existingID: id)
        #expect(throws: refusal) { try writer.enqueue(record(Self.different)) }
        try deliverAll()
        #expect(throws: refusal) { try writer.enqueue(record(Self.different)) }
    }

    /// Rows a 1.2.0 or 1.3.0 writer left: its digest is FNV-1a 64 of the compact JSON in its own member order. A
    /// retry by this release of the same record is still a retry, queued and delivered; a different one is
    /// still refused.
    @Test func digestsOlderWritersStoredStillRecogniseTheirRetries() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let raw = try RawDatabase(path: path)
        let payload = #"{"name":"a","external_id":"u1","properties":{"n":1.0}}"#
        let legacy = fnv("event", payload)
        #expect(legacy != fnv("event", #"{"external_id":"u1","name":"a","properties":{"n":1}}"#))
        try raw.execute(
            """
            INSERT INTO records (kind, payload, user_idempotency_key, record_digest)
                VALUES ('event', '{"name":"a","external_id":"u1","properties":{"n":1.0},"time":"2026-01-01T00:00:00.000Z"}',
                    'queued-by-1.3', \(legacy));
            INSERT INTO delivered_user_keys (user_key, idempotency_key, record_id, record_digest, delivered_at_ms)
                VALUES ('external_id:u1', 'delivered-by-1.3', 99, \(legacy), \(WallClock.nowMilliseconds()));
            """)
        let retry = #"{"type":"event","name":"a","external_id":"u1","properties":{"n":1.0},"idempotency_key":"KEY"}"#
        #expect(try writer.enqueue(record(retry.replacingOccurrences(of: "KEY", with: "queued-by-1.3"))) == 1)
        #expect(try writer.enqueue(record(retry.replacingOccurrences(of: "KEY", with: "delivered-by-1.3"))) == 99)
        let other = retry.replacingOccurrences(of: "1.0", with: "2")
        #expect(throws: QueueError.self) {
            try writer.enqueue(record(other.replacingOccurrences(of: "KEY", with: "queued-by-1.3")))
        }
        #expect(throws: QueueError.self) {
            try writer.enqueue(record(other.replacingOccurrences(of: "KEY", with: "delivered-by-1.3")))
        }
        #expect(try raw.scalar("SELECT count(*) FROM records") == "1")
    }
}
