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

extension QueueWriter {
    /// Forgets `users` (for an app, `queuectl forget` and the daemon's `POST /forget`): removes every record of each
    /// user, in flight and dead too, and the keys remembered for them, then scrubs their bytes from the file and its
    /// WAL (`QueueForgetting`). A user known by several identifiers is forgotten once per identifier.
    ///
    /// With `brazeDelete`, an erasure is queued in each user's own stream, sent to Braze's `POST /users/delete`
    /// after every request that carried a record of the user is answered and before the user's later records. Only
    /// someone who can read the erasure key may (`erasureNotPermitted`, nothing forgotten); a file before schema 7
    /// (whose daemon would send it to `/users/track`) throws `erasureNeedsNewerSchema` and nothing is written.
    ///
    /// The write lock is held at most a quarter of the busy timeout: a file too large to rebuild within that keeps
    /// its scrub owed (`ScrubReport.vacuumed` false), done by the upkeep once it fits.
    public func forget(_ users: [UserIdentity], brazeDelete: Bool = false) throws(QueueError) -> ForgetReport {
        try QueueForgetting.forget(users, brazeDelete: brazeDelete, file: file)
    }
}
