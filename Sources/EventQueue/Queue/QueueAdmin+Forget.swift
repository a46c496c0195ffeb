extension QueueAdmin {
    /// Erasures not sent yet (pending or in flight), dead ones, and of those the ones dead-lettered because their
    /// grant did not verify (`Erasure.unauthorized`: planted by someone who may not delete users at Braze): one pass
    /// over the table (no index names them).
    func erasureCounts() throws(QueueError) -> (pending: Int, dead: Int, unauthorized: Int) {
        let statement = try file.connection.statement(
            """
            SELECT count(*) FILTER (WHERE state != 'dead'), count(*) FILTER (WHERE state = 'dead'),
                count(*) FILTER (WHERE state = 'dead' AND instr(last_error, ?1) > 0)
            FROM records WHERE erasure IS NOT NULL
            """, operation: "counting erasures", "erasure " + Erasure.unauthorized + ":")
        defer { statement.reset() }
        guard try statement.step() else { return (0, 0, 0) }
        return (Int(statement.int64(0)), Int(statement.int64(1)), Int(statement.int64(2)))
    }

    /// The users a dead barrier (an erasure or identity call Braze refused) holds back:
    /// how many, and the first `shown` keys. Reads the dead letters only (`records_dead`).
    func heldUsers(shown: Int = 5) throws(QueueError) -> (count: Int, keys: [String]) {
        let statement = try file.connection.statement(
            """
            WITH barriers AS (
                SELECT user_key, other_user_key FROM records INDEXED BY records_dead
                WHERE state = 'dead' AND (erasure IS NOT NULL OR other_user_key IS NOT NULL)),
            held AS (
                SELECT user_key AS key FROM barriers
                UNION SELECT other_user_key FROM barriers WHERE other_user_key IS NOT NULL)
            SELECT key, count(*) OVER () FROM held ORDER BY key LIMIT ?1
            """, operation: "counting held users", shown)
        defer { statement.reset() }
        var (count, keys) = (0, [String]())
        while try statement.step() {
            count = Int(statement.int64(1))
            if let key = statement.text(0) { keys.append(key) }
        }
        return (count, keys)
    }
}

extension QueueWriter {
    /// Forgets `users` (the one way to forget, for an app, `queuectl forget` and the daemon's `POST /forget`):
    /// removes every record of each user from the queue file (pending, in flight and dead, and the idempotency keys
    /// the file remembers for them), whole users per transaction; then makes their bytes unreadable in the file
    /// and its WAL, one scrub for all of them (`ForgetReport.scrub`). A record of a user in flight at that moment
    /// is not delivered again, nor retried if its request fails.
    ///
    /// With `brazeDelete`, an erasure is queued in each user's own stream, in the transaction that removes the
    /// user: the drain loop sends it to Braze's `POST /users/delete` (at most 50 users of one identifier type per
    /// request) once every request that carried a record of the user has been answered, and before any record of
    /// the user enqueued after this call. Erasures of an earlier forget stay. Only someone who can read the erasure
    /// key may (`QueueError.erasureNotPermitted`, nothing forgotten).
    ///
    /// A user is matched as the queue files records (`UserIdentity.orderingKey`): a user known by several
    /// identifiers is forgotten once per identifier. Neither the transactions nor the scrub hold the write lock
    /// longer than a quarter of the busy timeout: a file too large to rebuild within that is left with its scrub
    /// owed (`ScrubReport.vacuumed` false, `QueueStats.scrubOwedSinceMilliseconds`), done by the upkeep once it
    /// fits. A writer never migrates a served file: on a file older than schema 7 (its daemon is older than 1.4.0
    /// and would send the erasure to `/users/track`), `brazeDelete` throws `QueueError.erasureNeedsNewerSchema`
    /// and nothing is written; forgetting without it works on any schema.
    public func forget(_ users: [UserIdentity], brazeDelete: Bool = false) throws(QueueError) -> ForgetReport {
        try QueueForgetting.forget(users, brazeDelete: brazeDelete, file: file)
    }
}
