/// The idempotency-key rule, in one place for every writer path (`RecordEncoder`, `QueueWriter`, `QueueBatch`,
/// salvage): which keys are valid, whose key it is, and what "the same record" means.
///
/// A key names one record of one user: a campaign's push id is shared by all its users, and a key reused for
/// another record of the same user is a writer's mistake to refuse, as payment APIs do, not a retry.
package enum IdempotencyKey {
    /// 1 to 255 bytes of UTF-8 without NUL: the columns' CHECK, and SQLite's `length()` stops at a NUL.
    package static func isValid(_ key: String) -> Bool {
        !key.utf8.isEmpty && key.utf8.count <= 255 && !key.utf8.contains(0)
    }

    /// Whose key a keyed record's key is and which record it names; `nil` for a record without a key, or whose
    /// object names no user the file could file the key under.
    package static func scope(of record: Record) -> KeyScope? {
        guard record.idempotencyKey != nil, let user = UserIdentity(filing: record.object) else { return nil }
        return KeyScope(
            userKey: user.orderingKey, digest: digest(kind: record.kind, object: record.object),
            legacyDigest: legacyDigest(kind: record.kind, object: record.object))
    }

    /// The record's digest as the caller gave it (before `time` or `quantity` is filled in, so a retry matches):
    /// FNV-1a 64 over the kind, a NUL and the object's canonical form (`CanonicalJSON`), so a retry spelled
    /// differently is still the same record. Not cryptographic: it only tells an honest writer's records apart.
    package static func digest(kind: RecordKind, object: JSONObject) -> Int64 {
        digest(kind: kind, payload: CanonicalJSON.bytes(of: object))
    }

    /// The digest writers of 1.2.0 and 1.3.0 stored (over the compact JSON as given), still accepted as the same
    /// record (`isSameRecord`), so a retry of a record an older writer queued is still a retry.
    package static func legacyDigest(kind: RecordKind, object: JSONObject) -> Int64 {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        object.serialize(into: &bytes)
        return digest(kind: kind, payload: bytes)
    }

    /// Whether a row whose `record_digest` is `stored` holds the record `scope` describes: its canonical or legacy
    /// digest, or no digest at all (nothing to tell them apart by).
    package static func isSameRecord(storedDigest stored: Int64?, as scope: KeyScope) -> Bool {
        guard let stored else { return true }
        return stored == scope.digest || stored == scope.legacyDigest
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
