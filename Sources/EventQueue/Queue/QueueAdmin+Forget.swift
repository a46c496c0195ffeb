extension QueueAdmin {
    /// Removes every record of `user` from the queue file in one transaction (pending, in flight and dead, and the
    /// idempotency keys the file remembers for them), then makes their bytes unreadable in the file and its WAL
    /// (a `VACUUM` and a `TRUNCATE` checkpoint: `ForgetReport.scrub`). A record of the user in flight at that moment
    /// is not delivered again, nor retried if its request fails.
    ///
    /// With `brazeDelete`, an erasure is queued in the user's own stream in the same transaction: the drain loop
    /// sends it to Braze's `POST /users/delete` once every request that carried a record of the user has been
    /// answered, and before any record of the user enqueued after this call. Erasures of an earlier forget stay.
    ///
    /// `user` is matched as the queue files records (`UserIdentity.orderingKey`): a user known by several identifiers
    /// is forgotten once per identifier. The scrub rebuilds the file, holding the write lock for about a second per
    /// 80 MB of records left in it (docs/PERFORMANCE.md); writers wait for it.
    public func forget(_ user: UserIdentity, brazeDelete: Bool = false) throws(QueueError) -> ForgetReport {
        try QueueForgetting.forget(user, brazeDelete: brazeDelete, file: file)
    }

    /// Erasures not sent yet (pending or in flight), dead ones, and of those the ones dead-lettered because their
    /// grant did not verify (`Erasure.unauthorized`: planted by someone who may not delete users at Braze): one pass
    /// over the table (no index names them).
    func erasureCounts() throws(QueueError) -> (pending: Int, dead: Int, unauthorized: Int) {
        let statement = try file.connection.statement(
            """
            SELECT count(*) FILTER (WHERE state != 'dead'), count(*) FILTER (WHERE state = 'dead'),
                count(*) FILTER (WHERE state = 'dead' AND instr(last_error, ?1) > 0)
            FROM records WHERE erasure IS NOT NULL
            """, operation: "counting erasures")
        defer { statement.reset() }
        statement.bind(1, "erasure " + Erasure.unauthorized + ":")
        guard try statement.step() else { return (0, 0, 0) }
        return (Int(statement.int64(0)), Int(statement.int64(1)), Int(statement.int64(2)))
    }
}

extension QueueWriter {
    /// Forgets `user` from this process, as `QueueAdmin.forget` does: an app that deletes an account removes the
    /// user's queued records (and their bytes) and, with `brazeDelete`, queues Braze's `POST /users/delete` for that
    /// user after every record of theirs already sent, in one call.
    ///
    /// A writer never migrates a served file: on a file older than schema 7 (its daemon is older than 1.4.0 and would
    /// send the erasure to `/users/track`), `brazeDelete` throws `QueueError.erasureNeedsNewerSchema` and nothing is
    /// written; forgetting without it works on any schema.
    public func forget(_ user: UserIdentity, brazeDelete: Bool = false) throws(QueueError) -> ForgetReport {
        try QueueForgetting.forget(user, brazeDelete: brazeDelete, file: file)
    }
}
