extension QueueWriter {
    /// Forgets `users` (for an app, `queuectl forget` and the daemon's `POST /forget`): removes every record of each
    /// user, in flight and dead too, and the keys remembered for them, whole users per short transaction, then
    /// scrubs their bytes from the file and its WAL (`QueueScrub`). A user known by several identifiers is
    /// forgotten once per identifier. A record in flight goes too: the drain loop's late ack or retry finds
    /// nothing, and its lease token goes into the erasure's `after`.
    ///
    /// With `brazeDelete`, an erasure is queued in each user's own stream, sent to Braze's `POST /users/delete`
    /// after every request that carried a record of the user is answered and before the user's later records. Only
    /// someone who can read the erasure key may (`erasureNotPermitted`, nothing forgotten); a file before schema 7
    /// (whose daemon would send it to `/users/track`) throws `erasureNeedsNewerSchema` and nothing is written.
    ///
    /// The write lock is held at most a quarter of the busy timeout: a file too large to rebuild within that keeps
    /// its scrub owed (`ScrubReport.vacuumed` false), done by the upkeep once it fits.
    public func forget(_ users: [UserIdentity], brazeDelete: Bool = false) throws(QueueError) -> ForgetReport {
        if brazeDelete {
            do {
                for user in users { try RecordValidator.checkUser(user) }
            } catch {
                throw QueueError.invalidRecord(error)
            }
        }
        // Before anything changes: a caller who may not delete users at Braze is refused with nothing forgotten.
        let key = brazeDelete ? try ErasureKey.forSigning(queuePath: file.path) : nil
        let connection = file.connection
        // On for this connection whatever the build's default (a writer's connection does not set it at open).
        try connection.execute("PRAGMA secure_delete = ON", operation: "turning on secure deletion")
        var report = ForgetReport(users: users)
        guard !users.isEmpty else { return report }
        let scan = try Self.scan(users, connection: connection)
        report.erasuresKept = scan.erasures
        // Whole users per transaction, as many as fit half the write-lock bound, so writers get the lock between;
        // each marks the scrub owed (QueueScrub.markOwed) before the scrub that clears it.
        let budget = QueueScrub.lockBudgetNanoseconds(connection) / 2
        var next = 0
        while next < users.count {
            next = try connection.write("forgetting users") { () throws(QueueError) -> Int in
                try QueueScrub.markOwed(file.path)
                let started = WallClock.monotonicNanoseconds()
                var index = next
                repeat {
                    try Self.removeAndQueue(
                        users[index], ids: scan.ids[users[index].orderingKey] ?? [], scan: scan, erasureKey: key,
                        connection: connection, path: file.path, into: &report)
                    index += 1
                } while index < users.count && WallClock.monotonicNanoseconds() &- started < budget
                return index
            }
        }
        file.unscrubbedDeletions += report.removed + report.rememberedKeys
        do {
            report.scrub = try QueueScrub.run(file)
        } catch {
            // The records are gone (committed); a busy file leaves only the scrub owed, as the report says.
            guard case .busy = error else { throw error }
            report.scrub.databaseBytes = QueueAdmin.fileSize(file.path)
        }
        return report
    }

    /// What `forget` found before taking the write lock: each user's record ids (erasures aside), the highest id
    /// then (ids are never reused), the erasures kept, the schema version.
    private struct Scan {
        var ids: [String: [Int64]] = [:]
        var highestID: Int64 = 0
        var erasures = 0
        var version = 0
    }

    /// One read of the table for all the users (no index holds every `user_key`), so the writes find rows by id.
    private static func scan(_ users: [UserIdentity], connection: Connection) throws(QueueError) -> Scan {
        let operation = "finding the users' records"
        return try connection.read(operation) { () throws(QueueError) -> Scan in
            var scan = Scan()
            scan.version = Int(try connection.scalarInt("PRAGMA user_version", operation: operation))
            scan.highestID = try connection.scalarInt("SELECT coalesce(max(id), 0) FROM records", operation: operation)
            let rows = try connection.rows(
                """
                SELECT user_key, id, \(scan.version >= QueueFile.limitsVersion ? "erasure IS NOT NULL" : "0")
                FROM records WHERE user_key IN (SELECT value FROM json_each(?1))
                """, operation: operation, JSONValue.array(users.map { .string($0.orderingKey) }).serialized
            ) { (key: $0.text(0), id: $0.int64(1), isErasure: $0.int64(2) != 0) }
            for row in rows {
                if row.isErasure {
                    scan.erasures += 1
                } else if let key = row.key {
                    scan.ids[key, default: []].append(row.id)
                }
            }
            return scan
        }
    }

    /// One user's statements, added to `report`.
    private static func removeAndQueue(
        _ user: UserIdentity, ids: [Int64], scan: Scan, erasureKey: ErasureKey?, connection: Connection,
        path: String, into report: inout ForgetReport
    ) throws(QueueError) {
        let operation = "forgetting a user"
        let version = scan.version
        let hasErasures = version >= QueueFile.limitsVersion
        if erasureKey != nil, !hasErasures {
            throw QueueError.erasureNeedsNewerSchema(path: path, fileVersion: version)
        }
        let userKey = user.orderingKey
        var tokens: [String] = []
        var leasedUntil: Int64?
        for tail in [false, true] {
            let deleted = try connection.rows(
                RecordStateSQL.forgetUser(hasErasures: hasErasures, tail: tail), operation: operation, userKey,
                tail ? scan.highestID as any SQLValue : RecordStateSQL.jsonArray(ids)
            ) { (state: $0.text(0), token: $0.text(1), until: $0.int64(2)) }
            for row in deleted {
                switch row.state {
                case "leased":
                    report.leased += 1
                    if let token = row.token, !tokens.contains(token) { tokens.append(token) }
                    leasedUntil = max(leasedUntil ?? 0, row.until)
                case "dead": report.dead += 1
                default: report.pending += 1
                }
            }
        }
        report.rememberedKeys += try forgetKeys(userKey, connection: connection, version: version)
        if let erasureKey {
            var erasure = Erasure(
                type: Erasure.IdentifierType(user), after: tokens, leasedUntilMilliseconds: leasedUntil)
            guard
                let id = try connection.firstRow(
                    "INSERT INTO records (kind, payload, erasure) VALUES ('attribute', ?1, ?2) RETURNING id",
                    operation: operation, Erasure.payload(for: user), erasure.json, row: { $0.int64(0) })
            else {
                throw QueueError.sqlite(code: 0, message: "the erasure's INSERT returned no id", operation: operation)
            }
            // The grant binds the id SQLite just gave the row, so it is written in a second statement.
            erasure.grant = erasureKey.grant(id: id, type: erasure.type, userKey: userKey)
            try connection.run("UPDATE records SET erasure = ?1 WHERE id = ?2", operation: operation, erasure.json, id)
            report.erasureIDs.append(id)
            report.waitsFor += tokens.filter { !report.waitsFor.contains($0) }
        }
    }

    /// Forgets the idempotency keys remembered for the user's delivered records: its rows of
    /// `delivered_user_keys` (schema 6 and later) and the global keys of the same records in `delivered_keys`.
    /// Keys delivered before migration 6 were never filed under a user and expire within the retention.
    private static func forgetKeys(_ userKey: String, connection: Connection, version: Int) throws(QueueError) -> Int {
        guard version >= QueueFile.userKeysVersion else { return 0 }
        let operation = "forgetting a user's remembered keys"
        let global = try connection.run(
            """
            DELETE FROM delivered_keys
            WHERE record_id IN (SELECT record_id FROM delivered_user_keys WHERE user_key = ?1)
            """, operation: operation, userKey)
        return try global
            + connection.run("DELETE FROM delivered_user_keys WHERE user_key = ?1", operation: operation, userKey)
    }
}
