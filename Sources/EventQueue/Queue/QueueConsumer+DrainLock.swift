/// Who holds the drain lock, when another drainer does.
public struct DrainLockHolder: Sendable, Hashable {
    /// The holder's consumer id (host, pid, random part): who to look for.
    public var owner: String
    /// When its lock lapses unless renewed (UTC Unix milliseconds).
    public var expiresAtMilliseconds: Int64
}

#if canImport(Glibc)
    import Glibc
#endif

extension QueueConsumer {
    /// Takes (or renews, when this consumer already holds it) the queue's drain lock for `leaseMilliseconds`.
    /// Returns `nil` when acquired, or the current holder when another drainer has it.
    public func acquireDrainLock(
        leaseMilliseconds: Int64, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> DrainLockHolder? {
        let connection = file.connection
        let leaseMilliseconds = ClockHorizon.clamp(leaseMilliseconds)
        // The lock is a lease too: losing its renewal to a power cut costs nothing (see `claim`).
        return try acquireDrainLockTransaction(connection, leaseMilliseconds: leaseMilliseconds, now: now)
    }

    private func acquireDrainLockTransaction(
        _ connection: Connection, leaseMilliseconds: Int64, now: Int64
    ) throws(QueueError) -> DrainLockHolder? {
        try connection.write("taking the drain lock", durable: false) { () throws(QueueError) in
            // A live process on this host keeps its lock whatever the clocks say: its expiry is in its clock,
            // which may run ahead of or behind ours (libfaketime, a container with its own offset), and taking
            // the lock over would run two passes on one file at once (issue 16: one batch delivered 5 times).
            if let holder = try readDrainLock(connection), holder.owner != consumerID,
                Self.isLiveProcessOnThisHost(holder.owner)
            {
                // Its expiry was stored by another process: callers schedule their next try from it, so keep
                // it plausible (an expiry at the top of Int64 must not overflow "expiry + 100 ms").
                return DrainLockHolder(
                    owner: holder.owner,
                    expiresAtMilliseconds: min(
                        max(holder.expiresAtMilliseconds, now), ClockHorizon.latestPlausible(after: now)))
            }
            let take = try connection.statement(
                """
                INSERT INTO drain_lock (id, owner, acquired_at_ms, expires_at_ms) VALUES (1, ?1, ?2, ?3)
                ON CONFLICT (id) DO UPDATE SET
                    owner = excluded.owner, expires_at_ms = excluded.expires_at_ms,
                    acquired_at_ms = CASE WHEN drain_lock.owner = excluded.owner
                        THEN drain_lock.acquired_at_ms ELSE excluded.acquired_at_ms END
                WHERE drain_lock.expires_at_ms <= ?2 OR drain_lock.owner = excluded.owner
                """, operation: "taking the drain lock")
            take.bind(1, consumerID)
            take.bind(2, now)
            take.bind(3, now + leaseMilliseconds)
            try take.run()
            if connection.changes == 1 { return nil }
            let read = try connection.statement(
                "SELECT owner, expires_at_ms FROM drain_lock WHERE id = 1", operation: "reading the drain lock")
            let holder =
                try read.step()
                ? DrainLockHolder(owner: read.text(0) ?? "?", expiresAtMilliseconds: read.int64(1)) : nil
            // Stored by another process: callers schedule their next try from it, so keep it plausible.
            let reported = holder.map {
                DrainLockHolder(
                    owner: $0.owner,
                    expiresAtMilliseconds: min(
                        max($0.expiresAtMilliseconds, now), ClockHorizon.latestPlausible(after: now)))
            }
            read.reset()
            // A lock expiring beyond the horizon was written by a clock ahead of ours (this host's clock was
            // stepped back, or the holder's runs fast). A live holder on this host renews it within a third of
            // its lease, now in the same clock as ours, so it keeps the lock; any other holder loses it now
            // rather than after the clock catches up.
            let implausible = holder.map { $0.expiresAtMilliseconds > ClockHorizon.latestPlausible(after: now) }
            guard let holder, !Self.isDeadProcessOnThisHost(holder.owner),
                !(implausible == true && !Self.isLiveProcessOnThisHost(holder.owner))
            else {
                // The holder crashed on this machine (a daemon restarted after `kill -9`), or its expiry is not
                // believable: take over now rather than wait for its lock to expire.
                let steal = try connection.statement(
                    "UPDATE drain_lock SET owner = ?1, acquired_at_ms = ?2, expires_at_ms = ?3 WHERE id = 1",
                    operation: "taking over the drain lock")
                steal.bind(1, consumerID)
                steal.bind(2, now)
                steal.bind(3, now + leaseMilliseconds)
                try steal.run()
                return nil
            }
            return reported
        }
    }

    /// The lock row, if any.
    private func readDrainLock(_ connection: Connection) throws(QueueError) -> DrainLockHolder? {
        let read = try connection.statement(
            "SELECT owner, expires_at_ms FROM drain_lock WHERE id = 1", operation: "reading the drain lock")
        defer { read.reset() }
        guard try read.step() else { return nil }
        return DrainLockHolder(owner: read.text(0) ?? "?", expiresAtMilliseconds: read.int64(1))
    }

    /// Gives the drain lock up (only if this consumer holds it), so the next drainer need not wait for expiry.
    public func releaseDrainLock() throws(QueueError) {
        let connection = file.connection
        try connection.write("releasing the drain lock") { () throws(QueueError) in
            let release = try connection.statement(
                "DELETE FROM drain_lock WHERE id = 1 AND owner = ?1", operation: "releasing the drain lock")
            release.bind(1, consumerID)
            try release.run()
        }
    }

    /// True when `owner` (a consumer id, `host:pid:random[@start]`) names a process on this host that no longer
    /// exists, or whose pid now belongs to a process started later.
    static func isDeadProcessOnThisHost(_ owner: String) -> Bool {
        ProcessIdentity.isRunning(owner: owner) == false
    }

    /// True when `owner` names a process on this host that is running.
    static func isLiveProcessOnThisHost(_ owner: String) -> Bool {
        ProcessIdentity.isRunning(owner: owner) == true
    }
}
