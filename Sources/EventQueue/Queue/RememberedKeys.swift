/// The idempotency keys of delivered records that a queue file remembers (`delivered_keys`, and from schema 6
/// `delivered_user_keys`): how many, how large (status shows both), and their pruning.
public enum RememberedKeys {
    /// Estimated bytes a row costs besides its key and user (which the table and its age index each hold): the
    /// record id, the time, the digest and the b-tree cell overhead (measured with `dbstat` on full pages).
    public static let rowOverheadBytes: Int64 = 40

    /// The count and estimated size (`estimate`): one pass over each table, no `dbstat` (not in every SQLite).
    static func measure(_ connection: Connection) throws(QueueError) -> (count: Int, bytes: Int64) {
        var count: Int64 = 0
        var bytes: Int64 = 0
        for table in try tables(connection) {
            let statement = try connection.statement(
                "SELECT count(*), coalesce(sum(\(keyBytes(table))), 0) FROM \(table)",
                operation: "counting remembered idempotency keys")
            defer { statement.reset() }
            _ = try statement.step()
            count += statement.int64(0)
            bytes += estimatedBytes(rows: statement.int64(0), keyBytes: statement.int64(1))
        }
        return (Int(count), bytes)
    }

    /// The SQL for a row's key bytes in `table`: the key, and in `delivered_user_keys` the user too.
    private static func keyBytes(_ table: String) -> String {
        table == "delivered_user_keys"
            ? "length(CAST(idempotency_key AS BLOB)) + length(CAST(user_key AS BLOB))"
            : "length(CAST(idempotency_key AS BLOB))"
    }

    /// The estimate of `measure` and `prune`: the key bytes twice (the table and its age index) plus
    /// `rowOverheadBytes` a row.
    private static func estimatedBytes(rows: Int64, keyBytes: Int64) -> Int64 {
        2 * keyBytes + rowOverheadBytes * rows
    }

    /// The key tables this file has (schema 6 added `delivered_user_keys`).
    static func tables(_ connection: Connection) throws(QueueError) -> [String] {
        var found: [String] = []
        for table in ["delivered_keys", "delivered_user_keys"] where try connection.hasTable(table) {
            found.append(table)
        }
        return found
    }

    /// Rows dated beyond the clock horizon (planted, or a clock far ahead), which would never expire.
    static func futureDated(_ connection: Connection, now: Int64) throws(QueueError) -> Int {
        var total: Int64 = 0
        for table in try tables(connection) {
            total += try connection.scalarInt(
                "SELECT count(*) FROM \(table) WHERE delivered_at_ms > ?1", operation: "checking remembered keys",
                ClockHorizon.latestPlausible(after: now))
        }
        return Int(total)
    }

    /// Forgets keys delivered before `cutoff`, a key beyond the clock horizon first dated `now` so that it expires
    /// too; the caller holds a write transaction. Returns how many were (or, with `dryRun`, would be) forgotten.
    static func prune(
        _ connection: Connection, before cutoff: Int64, now: Int64, dryRun: Bool = false
    ) throws(QueueError) -> (count: Int, bytes: Int64) {
        var count: Int64 = 0
        var bytes: Int64 = 0
        for table in try tables(connection) {
            if !dryRun {
                try connection.run(
                    "UPDATE \(table) SET delivered_at_ms = ?2 WHERE delivered_at_ms > ?1",
                    operation: "dating far-future idempotency keys now", ClockHorizon.latestPlausible(after: now), now)
            }
            // Dry run: a far-future row counts as dated now, as the clamp would make it.
            let measure = try connection.statement(
                """
                SELECT count(*), coalesce(sum(\(keyBytes(table))), 0) FROM \(table)
                WHERE (CASE WHEN delivered_at_ms > ?2 THEN ?3 ELSE delivered_at_ms END) < ?1
                """, operation: "counting old idempotency keys", cutoff, ClockHorizon.latestPlausible(after: now), now)
            _ = try measure.step()
            count += measure.int64(0)
            bytes += estimatedBytes(rows: measure.int64(0), keyBytes: measure.int64(1))
            measure.reset()
            if !dryRun {
                try connection.run(
                    "DELETE FROM \(table) WHERE delivered_at_ms < ?1", operation: "forgetting old idempotency keys",
                    cutoff)

            }
        }
        return (Int(count), bytes)
    }
}
