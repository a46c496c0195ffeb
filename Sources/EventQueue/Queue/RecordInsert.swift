/// The one INSERT of a record, for `QueueWriter` and `QueueBatch`: the idempotency-key rule (`IdempotencyKey`)
/// applied to the file's schema.
///
/// From schema 6 a key is scoped to the user: stored in `user_idempotency_key` with the record's digest, and
/// looked up among the user's queued records, its delivered keys (`delivered_user_keys`), the keys delivered before
/// the migration (`user_key` ''), and its records an older writer queued with the global key. On an older file (a
/// writer never migrates a served file) the key is global, as that schema defines.
enum RecordInsert {
    /// Inserts one row (pending, or dead with `deadReason`), in the caller's transaction (a keyed one is two steps).
    static func insert(
        _ connection: Connection, hasUserKeys: Bool, kind: RecordKind, payload: [UInt8], createdAt: Int64,
        key: String?, scope: KeyScope?, deadReason: String? = nil
    ) throws(QueueError) -> BatchOutcome {
        guard let key else {
            if deadReason == nil {
                // The hot path: one short statement.
                let insert = try connection.statement(
                    "INSERT INTO records (kind, payload, created_at_ms) VALUES (?1, ?2, ?3)", operation: "enqueueing")
                insert.bind(1, kind.rawValue)
                insert.bindText(2, utf8: payload)
                insert.bind(3, createdAt)
                try insert.run()
                return .enqueued(id: connection.lastInsertRowID)
            }
            let statement = try connection.statement(Self.deadLetterSQL, operation: "enqueueing a dead letter")
            bindRow(statement, kind: kind, payload: payload, createdAt: createdAt, deadReason: deadReason)
            try statement.run()
            return inserted(connection.lastInsertRowID, deadReason)
        }
        // Without user keys (schema 5 and older) the key is unique across users, the schema's own rule.
        let userScope = hasUserKeys ? scope : nil
        let statement = try connection.statement(
            userScope == nil ? Self.globalKeyedSQL : Self.userKeyedSQL,
            operation: deadReason == nil ? "enqueueing" : "enqueueing a dead letter")
        bindRow(statement, kind: kind, payload: payload, createdAt: createdAt, deadReason: deadReason)
        statement.bind(4, key)
        if let userScope {
            statement.bind(6, userScope.digest)
            statement.bind(7, userScope.userKey)
        }
        if try statement.step() {
            let id = statement.int64(0)
            try statement.run()
            return inserted(id, deadReason)
        }
        statement.reset()
        return .alreadyKnown(id: try existingRecord(connection, key: key, scope: userScope))
    }

    /// A row just inserted: a dead letter with `deadReason`, else pending.
    private static func inserted(_ id: Int64, _ deadReason: String?) -> BatchOutcome {
        deadReason.map { .deadLettered(id: id, reason: $0) } ?? .enqueued(id: id)
    }

    /// ?1 kind, ?2 payload, ?3 created at, ?5 dead reason (NULL: pending).
    private static func bindRow(
        _ statement: Statement, kind: RecordKind, payload: [UInt8], createdAt: Int64, deadReason: String?
    ) {
        statement.bind(1, kind.rawValue)
        statement.bindText(2, utf8: payload)
        statement.bind(3, createdAt)
        statement.bind(5, deadReason)
    }

    static let deadLetterSQL = """
        INSERT INTO records (kind, payload, created_at_ms, state, last_error, dead_at_ms)
        VALUES (?1, ?2, ?3, CASE WHEN ?5 IS NULL THEN 'pending' ELSE 'dead' END, ?5,
            CASE WHEN ?5 IS NULL THEN NULL ELSE ?3 END)
        """

    /// ?4 key, ?6 digest, ?7 the record's user_key. Inserts nothing when the user's key is known (queued, by this
    /// release or an older writer, or delivered).
    static let userKeyedSQL = """
        INSERT INTO records (kind, payload, created_at_ms, user_idempotency_key, record_digest, state, last_error,
            dead_at_ms)
        SELECT ?1, ?2, ?3, ?4, ?6, CASE WHEN ?5 IS NULL THEN 'pending' ELSE 'dead' END, ?5,
            CASE WHEN ?5 IS NULL THEN NULL ELSE ?3 END
        WHERE NOT EXISTS (SELECT 1 FROM delivered_user_keys WHERE user_key IN (?7, '') AND idempotency_key = ?4)
          AND NOT EXISTS (SELECT 1 FROM records WHERE idempotency_key = ?4 AND user_key = ?7)
        ON CONFLICT (user_key, user_idempotency_key) WHERE user_idempotency_key IS NOT NULL DO NOTHING
        RETURNING id
        """

    /// ?4 key. Schema 5 and older: inserts nothing when the key is known, queued or delivered, whoever's it was.
    static let globalKeyedSQL = """
        INSERT INTO records (kind, payload, created_at_ms, idempotency_key, state, last_error, dead_at_ms)
        SELECT ?1, ?2, ?3, ?4, CASE WHEN ?5 IS NULL THEN 'pending' ELSE 'dead' END, ?5,
            CASE WHEN ?5 IS NULL THEN NULL ELSE ?3 END
        WHERE NOT EXISTS (SELECT 1 FROM delivered_keys WHERE idempotency_key = ?4)
        ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING id
        """

    /// The record `key` already names. With user keys (`scope`) it must be the same record of that user
    /// (`IdempotencyKey.isSameRecord`: its digest is this record's canonical or legacy one, or it has none), else
    /// `idempotencyKeyReused`; without, a global key names whichever record has it.
    private static func existingRecord(
        _ connection: Connection, key: String, scope: KeyScope?
    ) throws(QueueError) -> Int64 {
        let operation = "looking up an idempotency key"
        let existing: (id: Int64, digest: Int64?)?
        if let scope {
            existing = try connection.firstRow(
                """
                SELECT id, record_digest FROM records WHERE user_key = ?2 AND user_idempotency_key = ?1
                UNION ALL SELECT id, record_digest FROM records WHERE idempotency_key = ?1 AND user_key = ?2
                UNION ALL SELECT record_id, record_digest FROM delivered_user_keys
                    WHERE user_key = ?2 AND idempotency_key = ?1
                UNION ALL SELECT record_id, NULL FROM delivered_user_keys WHERE user_key = '' AND idempotency_key = ?1
                LIMIT 1
                """, operation: operation, key, scope.userKey
            ) { (id: $0.int64(0), digest: $0.optionalInt64(1)) }
        } else {
            existing = try connection.firstRow(
                """
                SELECT id FROM records WHERE idempotency_key = ?1
                UNION ALL SELECT record_id FROM delivered_keys WHERE idempotency_key = ?1
                LIMIT 1
                """, operation: operation, key
            ) { (id: $0.int64(0), digest: nil) }
        }
        guard let existing else {
            let owner = scope.map { " of " + ValidationError.printable(String($0.userKey.prefix(80))) } ?? ""
            throw QueueError.corrupt(
                path: connection.path,
                detail: "idempotency key \"\(ValidationError.printable(String(key.prefix(40))))\"\(owner) is in the "
                    + "index but in no record")
        }
        if let scope, !IdempotencyKey.isSameRecord(storedDigest: existing.digest, as: scope) {
            throw QueueError.idempotencyKeyReused(key: key, userKey: scope.userKey, existingID: existing.id)
        }
        return existing.id
    }
}

extension BatchOutcome {
    /// Whether a row was written (the size limit measures only then).
    var isNew: Bool {
        if case .alreadyKnown = self { return false }
        return true
    }
}
