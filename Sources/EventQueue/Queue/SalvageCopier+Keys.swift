/// What salvage carries over besides the records: the keys of delivered records (so a writer's retry is still
/// recognised) and the id counter (so ids never repeat), each as far as the damaged file lets it be read.
extension SalvageCopier {
    /// Carries over the idempotency keys of delivered records, and the per-user ones with their digests (schema 6),
    /// as far as they can be read.
    func copyDeliveredKeys(into report: inout SalvageReport) throws(QueueError) {
        let select = "SELECT idempotency_key, record_id, delivered_at_ms FROM delivered_keys"
        guard let keys = try? reader.statement(select, operation: "reading keys") else { return }
        let insert = try writer.statement(
            "INSERT OR IGNORE INTO delivered_keys (idempotency_key, record_id, delivered_at_ms) VALUES (?1, ?2, ?3)",
            operation: "salvaging delivered keys")
        copyKeys(keys, into: insert, &report) { keys in
            guard let key = keys.validatedText(0), IdempotencyKey.isValid(key) else { return nil }
            return ([key, keys.int64(1)], keys.int64(2))
        }
        guard
            let userKeys = try? reader.statement(
                "SELECT user_key, idempotency_key, record_id, record_digest, delivered_at_ms FROM delivered_user_keys",
                operation: "reading keys"),
            let insertUserKey = try? writer.statement(
                """
                INSERT OR IGNORE INTO delivered_user_keys (user_key, idempotency_key, record_id, record_digest,
                    delivered_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                """, operation: "salvaging delivered keys")
        else { return }
        copyKeys(userKeys, into: insertUserKey, &report) { keys in
            guard let user = keys.validatedText(0), let key = keys.validatedText(1), IdempotencyKey.isValid(key)
            else { return nil }
            return ([user, key, keys.int64(2), keys.optionalInt64(3)], keys.int64(4))
        }
    }

    /// Runs `insert` for each row of `keys` that `row` finds valid (its values, then its delivery time), counting
    /// each new key. A date in the future would keep the key for good: no later than now (kept a full retention
    /// window).
    private func copyKeys(
        _ keys: Statement, into insert: Statement, _ report: inout SalvageReport,
        row: (Statement) -> (values: [(any SQLValue)?], deliveredAt: Int64)?
    ) {
        defer { keys.reset() }
        while (try? keys.step()) == true {
            guard let (values, deliveredAt) = row(keys) else { continue }
            if deliveredAt > now || deliveredAt < 0 { report.clamped += 1 }
            insert.bind(values: values + [min(max(deliveredAt, 0), max(0, now))])
            if (try? insert.run()) != nil, writer.changes == 1 { report.deliveredKeys += 1 }
            insert.reset()
        }
    }

    /// Keeps ids from ever repeating: the new file's AUTOINCREMENT counter starts at least where the old one was.
    func carrySequence() throws(QueueError) {
        // A counter near the top of the range (a hostile row's id once took it there) would make every later
        // enqueue fail: such a counter is not carried, the new file counts on from the ids it holds.
        guard let old = highestAssignedID(), old > 0, old < StoredRow.idRange.upperBound / 2 else { return }
        let updated = try writer.run(
            "UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'records'", operation: "salvaging", old)
        if updated == 0 {
            try writer.run(
                "INSERT INTO sqlite_sequence (name, seq) VALUES ('records', ?1)", operation: "salvaging", old)
        }
    }
}
