extension QueueAdmin {
    /// Erasures not sent yet, dead ones, and of those the ones whose grant did not verify (`Erasure.unauthorized`):
    /// one pass over the table (no index names them).
    func erasureCounts() throws(QueueError) -> (pending: Int, dead: Int, unauthorized: Int) {
        try file.connection.firstRow(
            """
            SELECT count(*) FILTER (WHERE state != 'dead'), count(*) FILTER (WHERE state = 'dead'),
                count(*) FILTER (WHERE state = 'dead' AND instr(last_error, ?1) > 0)
            FROM records WHERE erasure IS NOT NULL
            """, operation: "counting erasures", "erasure " + Erasure.unauthorized + ":"
        ) { (Int($0.int64(0)), Int($0.int64(1)), Int($0.int64(2))) } ?? (0, 0, 0)
    }

    /// The users a dead barrier holds back: how many, and the first `shown` keys (reads `records_dead` only).
    func heldUsers(shown: Int = 5) throws(QueueError) -> (count: Int, keys: [String]) {
        let rows = try file.connection.rows(
            """
            WITH barriers AS (
                SELECT user_key, other_user_key FROM records INDEXED BY records_dead
                WHERE state = 'dead' AND (erasure IS NOT NULL OR other_user_key IS NOT NULL)),
            held AS (
                SELECT user_key AS key FROM barriers
                UNION SELECT other_user_key FROM barriers WHERE other_user_key IS NOT NULL)
            SELECT key, count(*) OVER () FROM held ORDER BY key LIMIT ?1
            """, operation: "counting held users", shown
        ) { (key: $0.text(0), count: Int($0.int64(1))) }
        return (rows.last?.count ?? 0, rows.compactMap(\.key))
    }
}
