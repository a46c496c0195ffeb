/// A record checked, completed and serialized: exactly the row a writer inserts.
struct EncodedRecord {
    var kind: RecordKind
    var payload: [UInt8]
    var createdAtMilliseconds: Int64
    var idempotencyKey: String?
    var identity: UserIdentity
}

/// Turns a `Record` into the row to insert: validation, the writer-side defaults, serialization.
enum RecordEncoder {
    /// A whole record may not exceed this, whatever its parts: it bounds the memory of every later step.
    static let maximumPayloadBytes = 256 * 1024

    static func encode(_ record: Record, now: Int64) throws(QueueError) -> EncodedRecord {
        let identity: UserIdentity
        do {
            identity = try RecordValidator.validate(kind: record.kind, object: record.object)
        } catch {
            throw QueueError.invalidRecord(error)
        }
        // NUL is refused too: SQLite's length() stops at the first NUL, so the column's CHECK would fail with a
        // constraint error instead of this typed one.
        if let key = record.idempotencyKey, key.utf8.isEmpty || key.utf8.count > 255 || key.utf8.contains(0) {
            throw QueueError.invalidIdempotencyKey(key)
        }
        var object = record.object
        if record.kind != .attribute, object["time"] == nil {
            // The time of the interaction, not of delivery: a record may wait days for the app's next launch.
            object["time"] = .string(ISO8601.format(unixMilliseconds: now))
        }
        if record.kind == .purchase, object["quantity"] == nil {
            object["quantity"] = .number(JSONNumber(1))
        }
        var payload: [UInt8] = []
        payload.reserveCapacity(256)
        object.serialize(into: &payload)
        if payload.count > maximumPayloadBytes {
            throw QueueError.invalidRecord(
                ValidationError(
                    field: "record",
                    rule: "must serialize to at most \(maximumPayloadBytes) bytes (got \(payload.count))"))
        }
        return EncodedRecord(
            kind: record.kind, payload: payload, createdAtMilliseconds: now, idempotencyKey: record.idempotencyKey,
            identity: identity)
    }
}
