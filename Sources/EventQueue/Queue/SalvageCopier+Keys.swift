/// What salvage carries over besides the records: the keys of delivered records (so a writer's retry is still
/// recognised) and the id counter (so ids never repeat), each as far as the damaged file lets it be read.
extension SalvageCopier {
    /// Carries over the idempotency keys of delivered records, as far as they can be read.
    func copyDeliveredKeys(into report: inout SalvageReport) throws(QueueError) {
        guard
            let keys = try? reader.statement(
                "SELECT idempotency_key, record_id, delivered_at_ms FROM delivered_keys", operation: "reading keys")
        else { return }
        defer { keys.reset() }
        let insert = try writer.statement(
            "INSERT OR IGNORE INTO delivered_keys (idempotency_key, record_id, delivered_at_ms) VALUES (?1, ?2, ?3)",
            operation: "salvaging delivered keys")
        while (try? keys.step()) == true {
            guard let key = keys.validatedText(0), IdempotencyKey.isValid(key) else { continue }
            insertKey(insert, [key, keys.int64(1)], deliveredAt: keys.int64(2), report: &report)
        }
        copyDeliveredUserKeys(into: &report)
    }

    /// Runs `insert` for one delivered key (`values`, then its delivery time), counting it when it is new. A date in
    /// the future would keep the key for good: no later than now (kept a full retention window).
    private func insertKey(
        _ insert: Statement, _ values: [(any SQLValue)?], deliveredAt: Int64, report: inout SalvageReport
    ) {
        if deliveredAt > now || deliveredAt < 0 { report.clamped += 1 }
        insert.bind(values: values + [min(max(deliveredAt, 0), max(0, now))])
        if (try? insert.run()) != nil, writer.changes == 1 { report.deliveredKeys += 1 }
        insert.reset()
    }

    /// The per-user keys of delivered records (schema 6), with their digests, as far as they can be read.
    private func copyDeliveredUserKeys(into report: inout SalvageReport) {
        guard
            let keys = try? reader.statement(
                "SELECT user_key, idempotency_key, record_id, record_digest, delivered_at_ms FROM delivered_user_keys",
                operation: "reading keys"),
            let insert = try? writer.statement(
                """
                INSERT OR IGNORE INTO delivered_user_keys (user_key, idempotency_key, record_id, record_digest,
                    delivered_at_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                """, operation: "salvaging delivered keys")
        else { return }
        defer { keys.reset() }
        while (try? keys.step()) == true {
            guard let user = keys.validatedText(0), let key = keys.validatedText(1), IdempotencyKey.isValid(key)
            else { continue }
            insertKey(
                insert, [user, key, keys.int64(2), keys.optionalInt64(3)], deliveredAt: keys.int64(4), report: &report)
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
