/// The consumer's statements, in one place so the query-plan test checks exactly what runs.
enum ConsumerSQL {
    /// Claimable: pending and due, or leased with an expired lease. Blocked: an earlier live record of the same
    /// user that is not claimable (waiting for a retry, or in flight). `records_live` walks live rows in id
    /// order and `records_user_order` answers the per-user probe, so a claim costs O(log n) per candidate.
    /// The probe's index holds only (user_key, id) of live rows (`dead_at_ms IS NULL`), so claiming, renewing
    /// and releasing never rewrite it (Migrations/0004); the probe reads state and times from the row.
    /// A due time or expiry beyond `?5` (now plus `ClockHorizon.longestWaitMilliseconds`) was written by a clock
    /// ahead of ours (a clock stepped back since): it counts as passed, so it neither parks nor blocks anything.
    static let claim = """
        UPDATE records
        SET state = 'leased', lease_owner = ?1, lease_expires_at_ms = ?2
        WHERE id IN (
        \(claimCandidates))
        RETURNING id, kind, payload, user_key, created_at_ms, attempts
        """

    /// The rows `claim` is about to take (its subselect, the same text and parameters ?3 to ?5), read without their
    /// payload: each one's size is checked from the row's header before the claim's UPDATE loads it
    /// (`QueueConsumer.refuseOversizedCandidates`).
    static let claimCandidates = """
            SELECT r.id FROM records AS r INDEXED BY records_live
            WHERE r.state != 'dead'
              AND ((CASE r.state WHEN 'pending' THEN r.next_attempt_at_ms ELSE r.lease_expires_at_ms END) <= ?3
                OR (CASE r.state WHEN 'pending' THEN r.next_attempt_at_ms ELSE r.lease_expires_at_ms END) > ?5)
              AND NOT EXISTS (
                  SELECT 1 FROM records AS e INDEXED BY records_user_order
                  WHERE e.user_key = r.user_key AND e.id < r.id AND e.dead_at_ms IS NULL AND e.state != 'dead'
                    AND (CASE e.state WHEN 'pending' THEN e.next_attempt_at_ms ELSE e.lease_expires_at_ms END)
                        BETWEEN ?3 + 1 AND ?5)
            ORDER BY r.id
            LIMIT ?4
        """

    /// The global keys (older writers' records) for older writers, who look only there (Migrations/0001).
    static let rememberKeys = """
        INSERT OR REPLACE INTO delivered_keys (idempotency_key, record_id, delivered_at_ms)
        SELECT idempotency_key, id, ?3 FROM records
        WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'leased' AND lease_owner = ?2
          AND idempotency_key IS NOT NULL
        """

    /// Every key per user, with the record's digest, for writers of schema 6 and later (Migrations/0006): a
    /// retry of the same record after delivery gets its id, a different record under the same key is refused.
    /// An older writer's global key is remembered for its user too.
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
}
