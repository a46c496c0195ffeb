/// The idempotency-key rule, in one place for every writer path (`RecordEncoder`, `QueueWriter`, `QueueBatch`,
/// salvage): which keys are valid, whose key it is, and what "the same record" means.
///
/// Why: a key names one record of one user (issue 22 #6). A campaign's push id is shared by all its users, so a
/// key unique across users silently dropped every user's record but the first; and a key reused for another
/// record of the same user is a writer's mistake that must be refused, as payment APIs do, never taken for a
/// retry.
package enum IdempotencyKey {
    /// 1 to 255 bytes of UTF-8 without NUL: the columns' CHECK, and SQLite's `length()` stops at a NUL.
    package static func isValid(_ key: String) -> Bool {
        !key.utf8.isEmpty && key.utf8.count <= 255 && !key.utf8.contains(0)
    }

    /// Whose key a keyed record's key is and which record it names; `nil` for a record without a key, or whose
    /// object names no user the file could file the key under.
    package static func scope(of record: Record) -> KeyScope? {
        guard record.idempotencyKey != nil, let user = UserIdentity(filing: record.object) else { return nil }
        return KeyScope(userKey: user.orderingKey, digest: digest(kind: record.kind, object: record.object))
    }

    /// The record's digest as the caller gave it (before the writer fills in `time` or a purchase's `quantity`),
    /// so that a retry of the same record matches although its default time is later: FNV-1a 64 over the kind,
    /// a NUL and the object's canonical JSON, as a signed 64-bit integer (`records.record_digest`). Not
    /// cryptographic: it only has to tell an honest writer's different records apart (docs/SCHEMA.md).
    package static func digest(kind: RecordKind, object: JSONObject) -> Int64 {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        object.serialize(into: &bytes)
        return digest(kind: kind, payload: bytes)
    }

    /// FNV-1a 64 over `kind`, a NUL and `payload`.
    package static func digest(kind: RecordKind, payload: [UInt8]) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        for byte in kind.rawValue.utf8 { mix(byte) }
        mix(0)
        for byte in payload { mix(byte) }
        return Int64(bitPattern: hash)
    }
}
