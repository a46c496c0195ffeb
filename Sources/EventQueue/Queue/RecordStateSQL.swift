/// A record's life, as SQL: every statement that moves a row of `records` between states, in the order a record
/// meets them, so the state machine reads top to bottom and the query-plan tests check exactly what runs. A record
/// starts `pending` (or `dead`, set aside at enqueue) in `RecordInsert`; everything after that is below.
///
///     INSERT ─► pending ─ claim ─► leased ─ ack ─► (deleted; its key kept in delivered_keys)
///                 ▲   ▲             │ │ │
///                 │   └─ release ───┘ │ └─ renew (same state, later expiry)
///                 │   └─ nack ────────┤
///                 │                   └─ reject, nack past max attempts ─► dead ─ purge ─► (deleted)
///                 └──────────────────────── dead retry ◄──────────────────────┘
///
///   A lapsed lease is claimable again; one held by a dead process on this host is released at once
///   (`takeOverDeadProcess`).
package enum RecordStateSQL {
    /// The claim's walk (parameters ?3 to ?5; `QueueConsumer.walkClaimable`): each claimable row's id and user,
    /// read without the payload; `claimByIDs` then leases each batch's rows.
    /// Claimable: pending and due, or leased with an expired lease. Blocked: an earlier live record of the same
    /// user that is not claimable (waiting for a retry, or in flight). `records_live` walks live rows in id order;
    /// the per-user probe reads `records_user_order` (`userOrderIndexed`), which a pending record costs nothing.
    /// A due time or expiry beyond `?5` (`ClockHorizon.latestPlausible`) counts as passed: it blocks nothing.
    /// A barrier (an erasure, or an identity call: `other_user_key` set) stands in the stream of every user it
    /// names: it is claimed only once no earlier live row of those users is left, and it holds back every later
    /// row of them, dead ones included until `dead retry` or `dead purge`, so a barrier and its users' other rows
    /// are never in flight together. The "any earlier live row" probe walks `records_live` and runs only for a
    /// barrier candidate; an ordinary row probes `records_other_user` only when that index holds any row.
    package static let claimWalk = """
        SELECT r.id, r.user_key FROM records AS r INDEXED BY records_live
        WHERE r.state != 'dead'
          AND ((CASE r.state WHEN 'pending' THEN r.next_attempt_at_ms ELSE r.lease_expires_at_ms END) <= ?3
            OR (CASE r.state WHEN 'pending' THEN r.next_attempt_at_ms ELSE r.lease_expires_at_ms END) > ?5)
          AND NOT EXISTS (
              SELECT 1 FROM records AS e INDEXED BY records_user_order
              WHERE e.user_key = r.user_key AND e.id < r.id
                AND \(userOrderIndexed("e"))
                AND (\(barrier("e")) OR (e.state != 'dead'
                    AND (CASE e.state WHEN 'pending' THEN e.next_attempt_at_ms ELSE e.lease_expires_at_ms END)
                    BETWEEN ?3 + 1 AND ?5)))
          AND ((SELECT 1 FROM records INDEXED BY records_other_user WHERE other_user_key IS NOT NULL LIMIT 1)
                IS NULL
            OR NOT EXISTS (
              SELECT 1 FROM records AS o INDEXED BY records_other_user
              WHERE o.other_user_key = r.user_key AND o.id < r.id AND o.other_user_key IS NOT NULL))
          AND ((r.erasure IS NULL AND r.other_user_key IS NULL) OR (NOT EXISTS (
              SELECT 1 FROM records AS b INDEXED BY records_live
              WHERE b.state != 'dead' AND b.id < r.id AND b.dead_at_ms IS NULL
                AND (b.user_key IN (r.user_key, r.other_user_key)
                    OR b.other_user_key IN (r.user_key, r.other_user_key)))
            AND (r.other_user_key IS NULL OR (NOT EXISTS (
              SELECT 1 FROM records AS e INDEXED BY records_user_order
              WHERE e.user_key = r.other_user_key AND e.id < r.id AND \(userOrderIndexed("e"))
                AND (\(barrier("e"))))
            AND NOT EXISTS (
              SELECT 1 FROM records AS o INDEXED BY records_other_user
              WHERE o.other_user_key = r.other_user_key AND o.id < r.id AND o.other_user_key IS NOT NULL)))))
        ORDER BY r.id
        LIMIT ?4
        """

    /// A barrier in its users' streams: an erasure, or an identity call (`other_user_key` set).
    private static func barrier(_ table: String) -> String {
        "\(table).erasure IS NOT NULL OR \(table).other_user_key IS NOT NULL"
    }

    /// The condition of the partial index `records_user_order` (Migrations/0008), named in its probes so that
    /// SQLite may use it: the live rows that can block (leased, or due later) and every barrier.
    private static func userOrderIndexed(_ table: String) -> String {
        "((\(table).dead_at_ms IS NULL AND (\(table).state = 'leased' OR \(table).next_attempt_at_ms > 0)) OR "
            + "\(table).erasure IS NOT NULL OR \(table).other_user_key IS NOT NULL)"
    }

    /// Leases the rows `claimWalk` found for one batch (`?3`: their ids, a JSON array), in the walk's transaction,
    /// so they are still claimable and in order. `claimedRows` then reads them: cheaper than `UPDATE ... RETURNING`,
    /// which stores every returned row (payload too) in a temporary table before handing out the first.
    static let claimByIDs = """
        UPDATE records
        SET state = 'leased', lease_owner = ?1, lease_expires_at_ms = ?2
        WHERE id IN (SELECT value FROM json_each(?3)) AND state != 'dead'
        """

    /// The rows `claimByIDs` just leased (`?1`: the lease's token; `?2`: their ids). The last column says whether
    /// the row carries an idempotency key: a batch without one skips the key tables at its ack.
    static let claimedRows = """
        SELECT id, kind, payload, user_key, created_at_ms, attempts, erasure,
            idempotency_key IS NOT NULL OR user_idempotency_key IS NOT NULL
        FROM records
        WHERE id IN (SELECT value FROM json_each(?2)) AND state = 'leased' AND lease_owner = ?1
        """

    /// Every lease token in the file; naming the index's condition lets SQLite read `records_user_order`, not all.
    static let leaseOwners = """
        SELECT DISTINCT lease_owner FROM records
        WHERE state = 'leased' AND lease_owner IS NOT NULL AND \(userOrderIndexed("records"))
        """

    /// The global keys (older writers' records) for older writers, who look only there (Migrations/0001).
    static let rememberKeys = """
        INSERT OR REPLACE INTO delivered_keys (idempotency_key, record_id, delivered_at_ms)
        SELECT idempotency_key, id, ?3 FROM records
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
          AND idempotency_key IS NOT NULL
        """

    /// Every key per user, with the record's digest, for writers of schema 6 and later (an older writer's global
    /// key too): a retry of the same record gets its id, a different record under the same key is refused.
    static let rememberUserKeys = """
        INSERT OR REPLACE INTO delivered_user_keys (user_key, idempotency_key, record_id, record_digest,
            delivered_at_ms)
        SELECT user_key, coalesce(user_idempotency_key, idempotency_key), id, record_digest, ?3 FROM records
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
          AND coalesce(user_idempotency_key, idempotency_key) IS NOT NULL AND user_key IS NOT NULL
        """

    static let ack = """
        DELETE FROM records
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
        """

    static let nack = """
        UPDATE records SET
            attempts = attempts + ?3,
            state = CASE WHEN attempts + ?3 >= ?4 THEN 'dead' ELSE 'pending' END,
            dead_at_ms = CASE WHEN attempts + ?3 >= ?4 THEN ?7 ELSE NULL END,
            last_error = CASE WHEN attempts + ?3 >= ?4
                THEN 'gave up after ' || (attempts + ?3) || ' attempts: ' || ?6 ELSE ?6 END,
            next_attempt_at_ms = ?5,
            lease_owner = NULL,
            lease_expires_at_ms = NULL
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
        RETURNING id, state
        """

    static let reject = """
        UPDATE records SET
            state = 'dead', attempts = attempts + 1, last_error = ?3, dead_at_ms = ?4,
            lease_owner = NULL, lease_expires_at_ms = NULL
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
        """

    static let renew = """
        UPDATE records SET lease_expires_at_ms = ?3
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
        """

    static let release = """
        UPDATE records SET state = 'pending', lease_owner = NULL, lease_expires_at_ms = NULL
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
        """

    /// A claim candidate whose payload is too large, dead-lettered unread (`QueueConsumer.refuseOversized`).
    static let deadLetterOversized = """
        UPDATE records SET payload = ?2, \(deadLetterInRange)
        WHERE id = ?1 AND state != 'dead'
        """

    /// A claimed row with a stored value out of range (`StoredRow`), dead-lettered in the claim's transaction.
    static let deadLetterOutOfRange = """
        UPDATE records SET \(deadLetterInRange)
        WHERE id = ?1 AND state = 'leased' AND lease_owner = ?2
        """

    /// The dead-lettering of a claim (`?3` now, `?4` the reason). Values a CHECK could refuse are brought into
    /// range in the same statement, so it cannot fail on a row a foreign writer wrote around them.
    private static let deadLetterInRange = """
        state = 'dead', dead_at_ms = ?3, last_error = ?4, attempts = min(max(attempts, 0), 1000000),
            created_at_ms = min(max(created_at_ms, 0), 253402300799999), lease_owner = NULL, lease_expires_at_ms = NULL
        """

    /// The leases of processes on this host that died (`?1`: their lease tokens, a JSON array) go back to pending
    /// at once, instead of after their expiry (`QueueConsumer.releaseLeasesOfDeadProcesses`).
    static let takeOverDeadProcess = """
        UPDATE records SET state = 'pending', lease_owner = NULL, lease_expires_at_ms = NULL
        WHERE state = 'leased' AND lease_owner IN (SELECT value FROM json_each(?1))
        """

    /// `dead retry`: a dead letter whose payload now passes the rules is pending again, with a fresh budget.
    static let retryDead = """
        UPDATE records SET state = 'pending', attempts = 0, next_attempt_at_ms = 0, dead_at_ms = NULL
        WHERE state = 'dead' AND id = ?1
        """

    /// `dead retry` of one still invalid: it stays dead, its reason updated to the rule it breaks now.
    static let keepDead = "UPDATE records SET last_error = ?2 WHERE id = ?1 AND state = 'dead'"

    /// `dead purge`: dead letters deleted for good (`?1`: ids as a JSON array, or NULL for all).
    static let purgeDead = """
        DELETE FROM records
        WHERE state = 'dead' AND (?1 IS NULL OR id IN (SELECT value FROM json_each(?1)))
        RETURNING id
        """

    /// `forget`: the records of one user (`?1`) in any state, found by id so that no scan runs under the lock: those
    /// its scan found (`?2`, a JSON array), or (`tail`) any enqueued since (`id > ?2`). Erasures of an earlier
    /// forget stay (`hasErasures`): Braze has not confirmed them. Returns each row's state and lease.
    static func forgetUser(hasErasures: Bool, tail: Bool) -> String {
        """
        DELETE FROM records WHERE \(tail ? "id > ?2" : "id IN (SELECT value FROM json_each(?2))") AND user_key = ?1\(
            hasErasures ? " AND erasure IS NULL" : "")
        RETURNING state, lease_owner, lease_expires_at_ms
        """
    }

    /// Salvage: a readable row copied in the state it had (a leased row is pending again), with its per-user key
    /// and digest (schema 6 and later) and its erasure (schema 7 and later, so never without the keys) when the new
    /// file has those columns.
    static func salvageInsert(withUserKeys: Bool, withErasures: Bool) -> String {
        """
        INSERT INTO records (id, kind, payload, created_at_ms, idempotency_key, state, attempts,
            next_attempt_at_ms, last_error, dead_at_ms\(withUserKeys ? ", user_idempotency_key, record_digest" : "")\(
                withErasures ? ", erasure" : ""))
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10\(withUserKeys ? ", ?11, ?12" : "")\(withErasures ? ", ?13" : ""))
        """
    }

    /// Ids as a JSON array, bound as one parameter and expanded with `json_each` in SQL: one statement per
    /// batch whatever its size.
    static func jsonArray(_ ids: [Int64]) -> String {
        var text = "["
        text.reserveCapacity(ids.count * 8 + 2)
        for (offset, id) in ids.enumerated() {
            if offset > 0 { text += "," }
            text += String(id)
        }
        return text + "]"
    }
}

/// The limits (`QueueLimits`): what the queue gives up, always counted in `queue_drops` in the same transaction.
/// Never a leased record, an erasure (it must reach Braze) or an identity call (kinds other than `event`,
/// `attribute`, `purchase`: its users' later records must follow it).
///
///     pending ─ expire (older than the max age) ─► dead
///     dead, pending ─ drop-oldest (the file at its size limit) ─► (deleted)
extension RecordStateSQL {
    /// The oldest dead letters (not erasures), at most `?1`, below id `?2`: what drop-oldest gives up first. Returns
    /// per row whether expiry made it dead (already counted `expired`, so not counted again as `oldest`).
    static let dropOldestDead = """
        DELETE FROM records WHERE id IN (
            SELECT id FROM records INDEXED BY records_dead
            WHERE state = 'dead' AND id < ?2 AND erasure IS NULL AND kind IN ('event', 'attribute', 'purchase')
            ORDER BY id LIMIT ?1)
        RETURNING coalesce(substr(last_error, 1, 8) = 'expired:', 0)
        """

    /// Then the oldest pending records (never leased, never erasures), at most `?1`, below id `?2`.
    static let dropOldestPending = """
        DELETE FROM records WHERE id IN (
            SELECT id FROM records INDEXED BY records_live
            WHERE state != 'dead' AND state = 'pending' AND id < ?2 AND erasure IS NULL
              AND kind IN ('event', 'attribute', 'purchase')
            ORDER BY id LIMIT ?1)
        """

    /// Expiry (`QueueAdmin.expireOldRecords`): at most `?4` pending records with ids in (`?1`, `?2`], never one an
    /// operator retried after it expired (`dead retry` keeps `last_error`); now `?3`, age `?5`, max age `?6` (s).
    /// The reason is short on purpose: it is stored in every expired row, which the size limit counts.
    static let expire = """
        UPDATE records SET state = 'dead', dead_at_ms = ?3,
            last_error = 'expired: enqueued at least ' || ?5 || ' s ago, max age ' || ?6 || ' s',
            lease_owner = NULL, lease_expires_at_ms = NULL
        WHERE id IN (
            SELECT id FROM records INDEXED BY records_live
            WHERE state != 'dead' AND id > ?1 AND id <= ?2 AND state = 'pending' AND erasure IS NULL
              AND kind IN ('event', 'attribute', 'purchase')
              AND (last_error IS NULL OR substr(last_error, 1, 8) != 'expired:')
            ORDER BY id LIMIT ?4)
        RETURNING id
        """

    /// Whether `expire` has anything to do up to id `?1`: read first, so that a pass with nothing to expire takes
    /// no write lock.
    static let firstExpirable = """
        SELECT id FROM records INDEXED BY records_live
        WHERE state != 'dead' AND id <= ?1 AND state = 'pending' AND erasure IS NULL
          AND kind IN ('event', 'attribute', 'purchase')
          AND (last_error IS NULL OR substr(last_error, 1, 8) != 'expired:')
        ORDER BY id LIMIT 1
        """
}
