/// What one entry of a batch became.
public enum BatchOutcome: Sendable, Hashable {
    /// A new pending record.
    case enqueued(id: Int64)
    /// A new dead letter: the entry broke a rule and was set aside with its reason instead of refusing the batch.
    case deadLettered(id: Int64, reason: String)
    /// Its idempotency key is already known (queued, dead, or delivered recently): nothing was written.
    case alreadyKnown(id: Int64)

    /// The record's id, new or existing.
    public var id: Int64 {
        switch self {
        case .enqueued(let id), .deadLettered(let id, _), .alreadyKnown(let id): return id
        }
    }
}

/// One open write transaction of a `QueueWriter`, handed to `QueueWriter.batch(_:)`'s body.
///
/// A batch lets a caller that reads its input piece by piece (an NDJSON stream, an old store being imported)
/// append each record as it is read, so memory stays bounded by one record, while the whole input still commits
/// or rolls back as one. It also lets a bad entry be kept as a dead letter with its reason instead of refusing
/// everything: an import should not be blocked by one old entry that breaks a rule, nor lose it.
public final class QueueBatch {
    let connection: Connection
    let now: Int64

    init(connection: Connection, now: Int64) {
        self.connection = connection
        self.now = now
    }

    /// Checks and appends one record (as `QueueWriter.enqueue`). A rule broken throws `invalidRecord`; the caller
    /// decides whether that ends the batch.
    public func enqueue(_ record: Record) throws(QueueError) -> BatchOutcome {
        let encoded = try QueueWriter.encode(record, now: now)
        return try insert(
            kind: encoded.kind, payload: encoded.payload, key: encoded.idempotencyKey, deadReason: nil)
    }

    /// Appends `record` as a dead letter (state `dead`, `last_error` = `reason`) without checking Braze's rules:
    /// `queuectl dead list` shows it, and `queuectl dead retry` makes it pending once its payload passes the check.
    ///
    /// The queue file itself still requires a JSON object that names a user (its `user_key`) and a valid
    /// idempotency key; an invalid key is dropped (the reason says so), and a record naming no user is refused
    /// with `invalidRecord`, since there is no user to file it under.
    public func deadLetter(_ record: Record, reason: String) throws(QueueError) -> BatchOutcome {
        try Self.checkDeadLetter(record, reason: reason)
        var reason = reason
        var key = record.idempotencyKey
        if let candidate = key, !Self.isValidKey(candidate) {
            key = nil
            reason += " (its idempotency key was invalid and was dropped)"
        }
        var payload: [UInt8] = []
        payload.reserveCapacity(256)
        record.object.serialize(into: &payload)
        return try insert(kind: record.kind, payload: payload, key: key, deadReason: reason)
    }

    /// Appends `record` when it passes the checks, else keeps it as a dead letter whose reason is the check's
    /// message (with `context`, such as "line 12: ", in front).
    public func enqueueOrDeadLetter(_ record: Record, context: String = "") throws(QueueError) -> BatchOutcome {
        do {
            return try enqueue(record)
        } catch {
            switch error {
            case .invalidRecord(let validation):
                var located = validation
                located.index = nil
                located.line = nil
                return try deadLetter(record, reason: context + located.description)
            case .invalidIdempotencyKey:
                return try deadLetter(record, reason: context + error.description)
            default:
                throw error
            }
        }
    }

    /// Checks `record` as `enqueue` (or, with `orDeadLetter`, `enqueueOrDeadLetter`) would, without writing
    /// anything and without a transaction: what a caller that writes its input in several transactions runs over
    /// the whole input first, so that input which would be refused is refused before any of it is written.
    public static func check(_ record: Record, orDeadLetter: Bool, context: String = "") throws(QueueError) {
        do {
            _ = try QueueWriter.encode(record, now: WallClock.nowMilliseconds())
        } catch {
            guard orDeadLetter else { throw error }
            switch error {
            case .invalidRecord(let validation):
                var located = validation
                located.index = nil
                located.line = nil
                try checkDeadLetter(record, reason: context + located.description)
            case .invalidIdempotencyKey:
                try checkDeadLetter(record, reason: context + error.description)
            default:
                throw error
            }
        }
    }

    /// The one refusal of `deadLetter`: a record that names no user has no user to be filed under.
    static func checkDeadLetter(_ record: Record, reason: String) throws(QueueError) {
        guard namesFilingUser(record.object) else {
            throw QueueError.invalidRecord(
                ValidationError(
                    field: "record",
                    rule: "names no user, so it cannot be kept as a dead letter either (\(reason))"))
        }
    }

    static func isValidKey(_ key: String) -> Bool {
        !key.utf8.isEmpty && key.utf8.count <= 255 && !key.utf8.contains(0)
    }

    /// Mirrors the table's generated `user_key` (Migrations/0001_init.sql): is there a user to file this under?
    static func namesFilingUser(_ object: JSONObject) -> Bool {
        for key in ["external_id", "braze_id", "email", "phone"] {
            if case .string = object[key] { return true }
        }
        if case .object(let alias) = object["user_alias"] {
            let present = { (value: JSONValue?) -> Bool in
                guard let value else { return false }
                if case .null = value { return false }
                return true
            }
            return present(alias["alias_name"]) && present(alias["alias_label"])
        }
        return false
    }

    private func insert(
        kind: RecordKind, payload: [UInt8], key: String?, deadReason: String?
    ) throws(QueueError) -> BatchOutcome {
        let statement = try connection.statement(
            """
            INSERT INTO records (kind, payload, created_at_ms, idempotency_key, state, last_error, dead_at_ms)
            SELECT ?1, ?2, ?3, ?4, CASE WHEN ?5 IS NULL THEN 'pending' ELSE 'dead' END, ?5,
                CASE WHEN ?5 IS NULL THEN NULL ELSE ?3 END
            WHERE ?4 IS NULL OR NOT EXISTS (SELECT 1 FROM delivered_keys WHERE idempotency_key = ?4)
            ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING id
            """, operation: deadReason == nil ? "enqueueing" : "enqueueing a dead letter")
        statement.bind(1, kind.rawValue)
        statement.bindText(2, utf8: payload)
        statement.bind(3, now)
        statement.bind(4, key)
        statement.bind(5, deadReason)
        if try statement.step() {
            let id = statement.int64(0)
            try statement.run()
            if let deadReason { return .deadLettered(id: id, reason: deadReason) }
            return .enqueued(id: id)
        }
        statement.reset()
        // Without a key the insert always inserts; with one, it inserted nothing because the key is known.
        guard let key else {
            throw QueueError.corrupt(
                path: connection.path, detail: "an insert without an idempotency key inserted nothing")
        }
        return .alreadyKnown(id: try QueueWriter.existingRecordID(forKey: key, connection: connection))
    }
}

extension QueueWriter {
    /// Runs `body` inside one write transaction and commits what it appended, or nothing if it throws (its own
    /// error, or a `QueueError`, is rethrown). For inputs read piece by piece; see `QueueBatch`.
    ///
    /// The write lock is held while `body` runs, so other writers wait: read from a file or a spool, not from a
    /// slow producer, inside it.
    public func batch<T>(_ body: (QueueBatch) throws -> T) throws -> T {
        try file.checkFreeSpaceReserve()
        let connection = file.connection
        return try connection.transaction(operation: "enqueueing a batch") {
            try body(QueueBatch(connection: connection, now: WallClock.nowMilliseconds()))
        }
    }
}
