/// Who holds the drain lock, when another drainer does.
public struct DrainLockHolder: Sendable, Hashable {
    /// The holder's consumer id (host, pid, random part): who to look for.
    public var owner: String
    /// When its lock lapses unless renewed (UTC Unix milliseconds).
    public var expiresAtMilliseconds: Int64

    /// The holder with its expiry kept plausible: callers schedule from it (Int64.max must not overflow "+ 100 ms").
    func plausible(now: Int64) -> DrainLockHolder {
        DrainLockHolder(
            owner: owner,
            expiresAtMilliseconds: min(max(expiresAtMilliseconds, now), ClockHorizon.latestPlausible(after: now)))
    }
}

extension QueueConsumer {
    /// Takes (or renews) the queue's drain lock for `leaseMilliseconds`: `nil` when acquired, else the holder.
    public func acquireDrainLock(
        leaseMilliseconds: Int64, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> DrainLockHolder? {
        let connection = file.connection
        let leaseMilliseconds = ClockHorizon.clamp(leaseMilliseconds)
        return try connection.write("taking the drain lock", durable: false) { () throws(QueueError) in
            // A live process on this host keeps its lock whatever the clocks say: two passes must never run at once.
            if let holder = try readDrainLock(connection), holder.owner != consumerID,
                ProcessIdentity.isRunning(owner: holder.owner) == true
            {
                return holder.plausible(now: now)
            }
            let taken = try connection.run(
                """
                INSERT INTO drain_lock (id, owner, acquired_at_ms, expires_at_ms) VALUES (1, ?1, ?2, ?3)
                ON CONFLICT (id) DO UPDATE SET
                    owner = excluded.owner, expires_at_ms = excluded.expires_at_ms,
                    acquired_at_ms = CASE WHEN drain_lock.owner = excluded.owner
                        THEN drain_lock.acquired_at_ms ELSE excluded.acquired_at_ms END
                WHERE drain_lock.expires_at_ms <= ?2 OR drain_lock.owner = excluded.owner
                """, operation: "taking the drain lock", consumerID, now, now + leaseMilliseconds)
            if taken == 1 { return nil }
            let holder = try readDrainLock(connection)
            // A lock expiring beyond the horizon was written by a clock ahead of ours: a live holder on this host
            // keeps it (it renews within a third of its lease); any other holder loses it now.
            let implausible = holder.map { $0.expiresAtMilliseconds > ClockHorizon.latestPlausible(after: now) }
            guard let holder, ProcessIdentity.isRunning(owner: holder.owner) != false,
                !(implausible == true && ProcessIdentity.isRunning(owner: holder.owner) != true)
            else {
                // The holder died on this machine, or its expiry is not believable: take over now.
                try connection.run(
                    "UPDATE drain_lock SET owner = ?1, acquired_at_ms = ?2, expires_at_ms = ?3 WHERE id = 1",
                    operation: "taking over the drain lock", consumerID, now, now + leaseMilliseconds)
                return nil
            }
            return holder.plausible(now: now)
        }
    }

    private func readDrainLock(_ connection: Connection) throws(QueueError) -> DrainLockHolder? {
        try connection.firstRow(
            "SELECT owner, expires_at_ms FROM drain_lock WHERE id = 1", operation: "reading the drain lock"
        ) { DrainLockHolder(owner: $0.text(0) ?? "?", expiresAtMilliseconds: $0.int64(1)) }
    }

    /// Gives the drain lock up (only if this consumer holds it), so the next drainer need not wait for expiry.
    public func releaseDrainLock() throws(QueueError) {
        let connection = file.connection
        try connection.write("releasing the drain lock") { () throws(QueueError) -> Void in
            try connection.run(
                "DELETE FROM drain_lock WHERE id = 1 AND owner = ?1", operation: "releasing the drain lock", consumerID)
        }
    }
}
