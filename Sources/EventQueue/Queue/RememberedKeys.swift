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
            let sql = "SELECT count(*), coalesce(sum(\(keyBytes(table))), 0) FROM \(table)"
            let found = try connection.firstRow(sql, operation: "counting remembered idempotency keys", row: estimate)
            count += found?.count ?? 0
            bytes += found?.bytes ?? 0
        }
        return (Int(count), bytes)
    }

    /// The SQL for a row's key bytes in `table`: the key, and in `delivered_user_keys` the user too.
    private static func keyBytes(_ table: String) -> String {
        table == "delivered_user_keys"
            ? "length(CAST(idempotency_key AS BLOB)) + length(CAST(user_key AS BLOB))"
            : "length(CAST(idempotency_key AS BLOB))"
    }

    /// The estimate of `measure` and `prune` from a row of `count(*)` and the key bytes' sum: the key bytes twice
    /// (the table and its age index) plus `rowOverheadBytes` a row.
    private static func estimate(_ row: Statement) -> (count: Int64, bytes: Int64) {
        (row.int64(0), 2 * row.int64(1) + rowOverheadBytes * row.int64(0))
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
            let found = try connection.firstRow(
                """
                SELECT count(*), coalesce(sum(\(keyBytes(table))), 0) FROM \(table)
                WHERE (CASE WHEN delivered_at_ms > ?2 THEN ?3 ELSE delivered_at_ms END) < ?1
                """, operation: "counting old idempotency keys", cutoff, ClockHorizon.latestPlausible(after: now), now,
                row: estimate)
            count += found?.count ?? 0
            bytes += found?.bytes ?? 0
            if !dryRun {
                try connection.run(
                    "DELETE FROM \(table) WHERE delivered_at_ms < ?1", operation: "forgetting old idempotency keys",
                    cutoff)
            }
        }
        return (Int(count), bytes)
    }
}
