#if canImport(Glibc)
    import Glibc
#endif

extension QueueAdmin {
    /// Counts and sizes, in one short read transaction. `includingKeys` and `includingErasures` each read a whole
    /// table (status and metrics ask for them, not every pass).
    public func stats(
        now: Int64 = WallClock.nowMilliseconds(), includingKeys: Bool = false, includingErasures: Bool = false
    ) throws(QueueError) -> QueueStats {
        let connection = file.connection
        let operation = "reading queue statistics"
        var stats = try connection.read(operation) { () throws(QueueError) in
            // Beyond the horizon (?2) is a clock that went back: such a record is due now, not later (see claim).
            let live = try connection.firstRow(
                """
                SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'leased'),
                       min(CASE state WHEN 'pending' THEN next_attempt_at_ms ELSE lease_expires_at_ms END)
                           FILTER (WHERE (CASE state WHEN 'pending' THEN next_attempt_at_ms
                                           ELSE lease_expires_at_ms END) BETWEEN ?1 + 1 AND ?2)
                FROM records INDEXED BY records_live WHERE state != 'dead'
                """, operation: operation, now, ClockHorizon.latestPlausible(after: now)
            ) { (pending: Int($0.int64(0)), leased: Int($0.int64(1)), nextRetry: $0.optionalInt64(2)) }
            let dead = try connection.scalarInt(
                "SELECT count(*) FROM records INDEXED BY records_dead WHERE state = 'dead'", operation: operation)
            let oldestCreated = try connection.firstRow(
                "SELECT created_at_ms FROM records WHERE state = 'pending' ORDER BY id LIMIT 1", operation: operation
            ) { $0.int64(0) }
            var stats = QueueStats(
                pending: live?.pending ?? 0, leased: live?.leased ?? 0, dead: Int(dead),
                // In floating point: a stored time is another user's input, and `now - created` could overflow.
                oldestPendingAgeSeconds: oldestCreated.map { max(0, (Double(now) - Double($0)) / 1000) },
                nextRetryAtMilliseconds: live?.nextRetry, databaseBytes: 0, walBytes: 0,
                schemaVersion: 0)
            stats.queueBytes = try SpaceKeeper.pages(connection).used &* file.pageSize()
            if file.hasLimits {
                let recorded = try QueueLimits.read(connection)
                stats.limits = recorded?.limits
                stats.limitsSetAtMilliseconds = recorded?.setAt
                stats.drops = try QueueDrops.read(connection)
            }
            return stats
        }
        stats.schemaVersion = Int(try connection.scalarInt("PRAGMA user_version", operation: operation))
        stats.databaseBytes = Self.fileSize(path)
        stats.walBytes = Self.fileSize(path + "-wal")
        stats.scrubOwedSinceMilliseconds = QueueScrub.owedSinceMilliseconds(path)
        if includingKeys {
            let keys = try RememberedKeys.measure(connection)
            stats.rememberedKeys = keys.count
            stats.rememberedKeyBytes = keys.bytes
        }
        if includingErasures {
            (stats.erasuresPending, stats.erasuresDead, stats.erasuresUnauthorized) = try erasureCounts()
            if file.hasQueueClock { (stats.heldUsers, stats.heldUserKeys) = try heldUsers() }
        }
        return stats
    }

    /// Live records (pending and leased) in delivery order.
    public func peek(limit: Int = 10) throws(QueueError) -> [QueuedRecord] {
        try list(where: "state != 'dead'", limit: limit, operation: "peeking at the queue")
    }

    /// Dead letters, oldest first, with their last error.
    public func deadLetters(limit: Int = Int(Int32.max)) throws(QueueError) -> [QueuedRecord] {
        try list(where: "state = 'dead'", limit: limit, operation: "listing dead letters")
    }

    /// Deletes dead records for good; `nil` means all of them. Returns the ids deleted.
    @discardableResult
    public func purgeDead(ids: [Int64]?) throws(QueueError) -> [Int64] {
        let connection = file.connection
        let operation = "purging dead letters"
        let purged = try connection.write(operation) { () throws(QueueError) in
            try connection.rows(RecordStateSQL.purgeDead, operation: operation, ids.map(RecordStateSQL.jsonArray)) {
                $0.int64(0)
            }.sorted()
        }
        file.unscrubbedDeletions += purged.count
        return purged
    }

    private func list(where condition: String, limit: Int, operation: String) throws(QueueError) -> [QueuedRecord] {
        try file.connection.rows(
            """
            SELECT id, kind, state, payload, attempts, created_at_ms, next_attempt_at_ms, last_error, dead_at_ms,
                erasure
            FROM records WHERE \(condition) ORDER BY id LIMIT ?1
            """, operation: operation, max(0, limit)
        ) { statement in
            QueuedRecord(
                id: statement.int64(0),
                kind: RecordKind(rawValue: statement.text(1) ?? "") ?? .event,
                state: QueuedRecord.State(rawValue: statement.text(2) ?? "") ?? .pending,
                payload: statement.text(3) ?? "",
                attempts: Int(statement.int64(4)),
                createdAtMilliseconds: statement.int64(5),
                nextAttemptAtMilliseconds: statement.int64(6),
                lastError: statement.text(7),
                deadAtMilliseconds: statement.optionalInt64(8),
                erasure: statement.text(9).flatMap(Erasure.init(json:)))
        }
    }

    static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }

    /// The highest record id ever assigned (never reused; 0 before the first): "records enqueued" from the file.
    public func highestAssignedID() throws(QueueError) -> Int64 {
        try file.connection.scalarInt(
            "SELECT seq FROM sqlite_sequence WHERE name = 'records'", operation: "reading the record sequence")
    }
}
