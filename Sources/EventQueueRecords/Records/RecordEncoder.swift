/// A record checked, completed and serialized: exactly the row a writer inserts.
package struct EncodedRecord: Sendable {
    package var kind: RecordKind
    /// The Braze object as stored in `records.payload`: canonical JSON, `time` (and a purchase's `quantity`)
    /// filled in.
    package var payload: [UInt8]
    package var createdAtMilliseconds: Int64
    package var idempotencyKey: String?
    /// For a keyed record: the digest of the record as given and its stored `user_key` (`IdempotencyKey`).
    package var keyScope: KeyScope?

    /// A record encoded earlier and kept apart (`queuectl enqueue --ndjson` keeps its check pass's payloads).
    package init(
        kind: RecordKind, payload: [UInt8], createdAtMilliseconds: Int64, idempotencyKey: String?, keyScope: KeyScope?
    ) {
        self.kind = kind
        self.payload = payload
        self.createdAtMilliseconds = createdAtMilliseconds
        self.idempotencyKey = idempotencyKey
        self.keyScope = keyScope
    }
}

/// What a keyed record's key is checked against: whose key it is and which record it names.
package struct KeyScope: Sendable, Hashable {
    /// The record's `user_key` as the file will derive it.
    package var userKey: String
    /// `IdempotencyKey.digest` of the record as the caller gave it: what this release stores.
    package var digest: Int64
    /// `IdempotencyKey.legacyDigest` of the same: what 1.2.0 and 1.3.0 stored, still the same record.
    package var legacyDigest: Int64
}

/// Why `RecordEncoder` refused a record. The writer API throws these as `QueueError.invalidRecord` and
/// `QueueError.invalidIdempotencyKey`, whose descriptions are these descriptions.
package enum RecordEncodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The record broke a Braze rule (or is too large once serialized).
    case invalidRecord(ValidationError)
    /// An idempotency key that is empty, longer than 255 bytes or holds a NUL.
    case invalidIdempotencyKey(String)

    package var description: String {
        switch self {
        case .invalidRecord(let error):
            return error.description
        case .invalidIdempotencyKey(let key):
            let shown = ValidationError.printable(String(key.prefix(40)))
            return "invalid idempotency key \"\(shown)\": must be 1 to 255 bytes, without NUL characters"
        }
    }
}

/// Turns a `Record` into the row to insert: validation, the writer-side defaults, serialization.
package enum RecordEncoder {
    /// A whole record may not exceed this, whatever its parts: it bounds the memory of every later step.
    package static let maximumPayloadBytes = 256 * 1024

    package static func encode(_ record: Record, now: Int64) throws(RecordEncodingError) -> EncodedRecord {
        do {
            _ = try RecordValidator.validate(kind: record.kind, object: record.object)
        } catch {
            throw .invalidRecord(error)
        }
        // NUL is refused too: SQLite's length() stops at the first NUL, so the column's CHECK would fail with a
        // constraint error instead of this typed one.
        if let key = record.idempotencyKey, !IdempotencyKey.isValid(key) {
            throw .invalidIdempotencyKey(key)
        }
        // The validator made sure the object names exactly one user, so the derivation finds it.
        let scope = IdempotencyKey.scope(of: record)
        var object = record.object
        fillInTime(&object, kind: record.kind, enqueuedAtMilliseconds: now)
        if record.kind == .purchase, object["quantity"] == nil {
            object["quantity"] = .number(JSONNumber(1))
        }
        var payload: [UInt8] = []
        payload.reserveCapacity(256)
        object.serialize(into: &payload)
        if payload.count > maximumPayloadBytes {
            throw .invalidRecord(
                ValidationError(
                    field: "record",
                    rule: "must serialize to at most \(maximumPayloadBytes) bytes (got \(payload.count))"))
        }
        return EncodedRecord(
            kind: record.kind, payload: payload, createdAtMilliseconds: now, idempotencyKey: record.idempotencyKey,
            keyScope: scope)
    }

    /// Gives an event or a purchase without `time` the time it was enqueued (the interaction's, not delivery's: a
    /// record may wait days). `StoredPayload.check` does the same for rows a foreign writer stored without one.
    package static func fillInTime(_ object: inout JSONObject, kind: RecordKind, enqueuedAtMilliseconds: Int64) {
        if kind == .event || kind == .purchase, object["time"] == nil {
            object["time"] = .string(ISO8601.format(unixMilliseconds: enqueuedAtMilliseconds))
        }
    }
}
