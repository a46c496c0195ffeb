/// `forget`, on any open queue file (a writer's, an admin's, the daemon's consumer's): one transaction removes every
/// record of one user (pending, in flight, dead) and the idempotency keys the file remembers for them, and with a
/// Braze delete queues the user's erasure in the same transaction; then the scrub makes the removed bytes unreadable
/// (`QueueScrub`).
///
/// Why in flight too: a record of the user in a request at that moment must not be delivered again, nor retried if
/// its request fails. Its row is gone, so the drain loop's late ack, retry or renewal of it finds nothing; its
/// lease token goes into the erasure's `after`, so the deletion leaves only once that request has been answered.
enum QueueForgetting {
    /// The schema version that added `records.erasure` (Migrations/0007_limits_and_erasure.sql).
    static let erasureVersion = 7

    static func forget(
        _ user: UserIdentity, brazeDelete: Bool, file: QueueFile
    ) throws(QueueError) -> ForgetReport {
        if brazeDelete {
            do {
                try RecordValidator.checkUser(user)
            } catch {
                throw QueueError.invalidRecord(error)
            }
        }
        // Before anything changes: a caller who may not delete users at Braze is refused with nothing forgotten.
        let key = brazeDelete ? try ErasureKey.forSigning(queuePath: file.path) : nil
        let connection = file.connection
        // On for this connection whatever the build's default (a writer's connection does not set it at open).
        try connection.execute("PRAGMA secure_delete = ON", operation: "turning on secure deletion")
        var report = try connection.write("forgetting a user") { () throws(QueueError) -> ForgetReport in
            try removeAndQueue(user, erasureKey: key, connection: connection, path: file.path)
        }
        file.unscrubbedDeletions += report.removed + report.rememberedKeys
        do {
            report.scrub = try QueueScrub.run(
                file, checkpointDeadlineNanoseconds: QueueScrub.forgetCheckpointDeadlineNanoseconds)
        } catch {
            // The records are gone (committed); a file busy for longer than the busy timeout leaves only the scrub
            // undone, which the report says (`scrub.bytesGone` false) and a second forget does.
            guard case .busy = error else { throw error }
            report.scrub.databaseBytes = QueueAdmin.fileSize(file.path)
        }
        return report
    }

    /// The transaction's statements.
    private static func removeAndQueue(
        _ user: UserIdentity, erasureKey: ErasureKey?, connection: Connection, path: String
    ) throws(QueueError) -> ForgetReport {
        let brazeDelete = erasureKey != nil
        let operation = "forgetting a user"
        let version = Int(try connection.scalarInt("PRAGMA user_version", operation: operation))
        let hasErasures = version >= erasureVersion
        if brazeDelete, !hasErasures { throw QueueError.erasureNeedsNewerSchema(path: path, fileVersion: version) }
        let userKey = user.orderingKey
        var report = ForgetReport(user: user)
        var tokens: [String] = []
        let delete = try connection.statement(RecordStateSQL.forgetUser(hasErasures: hasErasures), operation: operation)
        delete.bind(1, userKey)
        while try delete.step() {
            switch delete.text(0) {
            case "leased":
                report.leased += 1
                if let token = delete.text(1), !tokens.contains(token) { tokens.append(token) }
            case "dead": report.dead += 1
            default: report.pending += 1
            }
        }
        delete.reset()
        report.rememberedKeys = try forgetKeys(userKey, connection: connection, version: version)
        if hasErasures {
            report.erasuresKept = Int(
                try count(
                    "SELECT count(*) FROM records WHERE user_key = ?1 AND erasure IS NOT NULL", userKey,
                    connection: connection))
        }
        if brazeDelete {
            let insert = try connection.statement(
                "INSERT INTO records (kind, payload, erasure) VALUES ('attribute', ?1, ?2) RETURNING id",
                operation: operation)
            insert.bind(1, Erasure.payload(for: user))
            insert.bind(2, Erasure(type: Erasure.IdentifierType(user), after: tokens).json)
            guard try insert.step() else {
                throw QueueError.sqlite(code: 0, message: "the erasure's INSERT returned no id", operation: operation)
            }
            let id = insert.int64(0)
            insert.reset()
            // The grant binds the id SQLite just gave the row, so it is written in a second statement.
            let type = Erasure.IdentifierType(user)
            let grant = try connection.statement("UPDATE records SET erasure = ?1 WHERE id = ?2", operation: operation)
            grant.bind(
                1,
                Erasure(type: type, after: tokens, grant: erasureKey?.grant(id: id, type: type, userKey: userKey)).json)
            grant.bind(2, id)
            try grant.run()
            report.erasureID = id
            report.waitsFor = tokens
        }
        return report
    }

    /// Forgets the idempotency keys remembered for the user's delivered records: its rows of
    /// `delivered_user_keys` (schema 6 and later) and the global keys of the same records in `delivered_keys`.
    /// Keys delivered before migration 6 were never filed under a user and expire within the retention.
    private static func forgetKeys(_ userKey: String, connection: Connection, version: Int) throws(QueueError) -> Int {
        guard version >= QueueFile.userKeysVersion else { return 0 }
        let operation = "forgetting a user's remembered keys"
        let global = try connection.statement(
            """
            DELETE FROM delivered_keys
            WHERE record_id IN (SELECT record_id FROM delivered_user_keys WHERE user_key = ?1)
            """, operation: operation)
        global.bind(1, userKey)
        try global.run()
        var forgotten = connection.changes
        let perUser = try connection.statement(
            "DELETE FROM delivered_user_keys WHERE user_key = ?1", operation: operation)
        perUser.bind(1, userKey)
        try perUser.run()
        forgotten += connection.changes
        return forgotten
    }

    private static func count(_ sql: String, _ userKey: String, connection: Connection) throws(QueueError) -> Int64 {
        let statement = try connection.statement(sql, operation: "forgetting a user")
        defer { statement.reset() }
        statement.bind(1, userKey)
        return try statement.step() ? statement.int64(0) : 0
    }
}
