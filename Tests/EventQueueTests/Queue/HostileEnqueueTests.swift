import Testing

@testable import EventQueue

/// Hostile records at the writer API, down to the queue file: what Tests/EventQueueRecordsTests/Records checks
/// on the record path alone (HostileRecordTests), seen from the rows that SQLite stores.
@Suite struct HostileEnqueueTests {
    /// SQLite's length() stops at NUL, so without the check a NUL key would fail the column's CHECK with an SQLite
    /// error; it must be the typed error, and nothing may be written.
    @Test func anIdempotencyKeyWithNULIsRefusedBeforeSQLite() throws {
        let directory = Scratch()
        let writer = try QueueWriter(path: directory.file("q.db"))
        defer { writer.close() }
        #expect(throws: QueueError.invalidIdempotencyKey("\u{0}k")) {
            try writer.enqueue(Record.event("n", user: .externalID("u1"), idempotencyKey: "\u{0}k"))
        }
        #expect(try RawDatabase(path: directory.file("q.db")).scalar("SELECT count(*) FROM records") == "0")
    }

    /// A line with a second identity never becomes a record, and the user_key SQLite derives for the records
    /// that do is the identity the validator saw (external_id before email in attributes).
    @Test func aDuplicateIdentityCannotReachTheQueue() throws {
        let directory = Scratch()
        let writer = try QueueWriter(path: directory.file("q.db"))
        defer { writer.close() }
        let good = try Record(jsonLine: #"{"type":"event","external_id":"u1","name":"n"}"#)
        #expect(
            throws: ValidationError(
                field: "record", rule: #"is not valid JSON: invalid JSON at byte 35: duplicate key "external_id""#)
        ) {
            try Record(jsonLine: #"{"type":"event","external_id":"u1","external_id":"u2","name":"n"}"#)
        }
        let attribute = try Record(jsonLine: #"{"type":"attribute","email":"a@b.co","phone":"+1 555 0100"}"#)
        try writer.enqueue(contentsOf: [good, attribute])
        let keys = try RawDatabase(path: directory.file("q.db")).rows("SELECT user_key FROM records ORDER BY id")
        #expect(keys == [["external_id:u1"], ["email:a@b.co"]])
    }

    /// The writer API throws the encoder's refusal of a key as `QueueError`, with the same words.
    @Test func aRefusedKeyReadsTheSameAsAQueueError() {
        let tooLong = String(repeating: "\u{7}", count: 300)
        #expect(
            QueueError.invalidIdempotencyKey(tooLong).description
                == RecordEncodingError.invalidIdempotencyKey(tooLong).description)
        #expect(QueueError(RecordEncodingError.invalidIdempotencyKey("k")) == .invalidIdempotencyKey("k"))
    }
}
