#if canImport(Glibc)
    import Glibc
#endif

/// The consumer side of a queue: claim records under a lease, then ack, nack or reject them.
///
/// Every state change commits in one write transaction (an ack also remembers the records' idempotency keys;
/// `ackAndClaim` acks and claims in the same one), and the lease is a timestamp and an owner in the file, not
/// process memory: a consumer killed at any point leaves its records to be claimed again once the lease expires,
/// or at once by a consumer on the same host that sees the owner's process is gone (`releaseLeasesOfDeadProcesses`), and
/// nothing else. Records of one user are claimed in id order, and never while an earlier record of that user is
/// waiting for a retry or is in flight.
///
/// It does the lease protocol and nothing else; counts, dead letters and upkeep are `QueueAdmin`'s (`admin`).
/// Use from one thread at a time (the daemon gives it a dedicated executor).
public final class QueueConsumer {
    let file: QueueFile
    /// Identifies this consumer in lease tokens: host, pid and a random part.
    public let consumerID: String
    private var claimSequence: UInt64 = 0
    /// Rows this consumer's claims dead-lettered instead of returning (values out of range, oversized payloads),
    /// since it was opened: the drain loop counts the difference across a claim as dead in its pass. (A claim
    /// whose transaction rolls back throws, so its count is never used.)
    public private(set) var deadLetteredAtClaim = 0
    /// Leases whose rows carry no idempotency key (nearly all: keys are optional), seen at their claim: their ack
    /// skips the two statements that remember keys, which found nothing to remember and cost a quarter of an
    /// ack's SQLite work (issue 34). A row's keys never change while it is leased. Forgotten at the lease's ack,
    /// nack, reject or release; a lease never settled (its consumer lost it) stays until `keylessLeaseLimit`.
    private var keylessLeases: Set<String> = []
    private static let keylessLeaseLimit = 10_000

    /// Opens the queue at `path` as a consumer: the full schema check (a planted trigger is refused), then the
    /// page cache a claim over a big backlog needs. `consumerID` names this consumer in leases and the drain
    /// lock (default: host, pid and a random part, so a restart on this host can release a dead one's leases).
    public init(path: String, options: QueueOptions = QueueOptions(), consumerID: String? = nil) throws(QueueError) {
        file = try QueueFile(path: path, options: options, schemaCheck: .full)
        self.consumerID = consumerID ?? QueueConsumer.makeConsumerID()
        // A claim walks the live rows and probes each user's index; with SQLite's default 2 MB page cache a big
        // backlog's pages were read again from the OS on every claim (pread was 13 % of a delivering daemon's
        // CPU at 200,000 records). One consumer per process, so 32 MB at most, and only as the file needs it.
        try file.connection.execute("PRAGMA cache_size = -32768", operation: "sizing the page cache")
    }

    /// The queue file's path.
    public var path: String { file.path }

    /// Closes the connection; the last connection to close checkpoints and removes the `-wal` file.
    public func close() {
        file.close()
    }

    /// Claims up to `limit` claimable records (pending and due, or leased with an expired lease), oldest first,
    /// in one `BEGIN IMMEDIATE` transaction, leasing them for `leaseMilliseconds` (at most `ClockHorizon`'s).
    public func claim(
        limit: Int, leaseMilliseconds: Int64, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> Claim {
        let lease = nextLease(leaseMilliseconds: leaseMilliseconds, now: now)
        let connection = file.connection
        // Not durable: losing a claim to a power cut only makes its records claimable again, which is what an
        // expired lease does anyway, and the next durable commit (the ack) syncs the WAL up to and including it, so
        // a batch costs one sync instead of two, and nothing an ack made durable can depend on a lost claim.
        let records = try connection.write("claiming records", durable: false) {
            () throws(QueueError) -> [ClaimedRecord] in
            guard let ids = try walkClaimable(claims: 1, limit: limit, now: now).first else { return [] }
            return try claimRows(ids, lease: lease, now: now)
        }
        return Claim(lease: lease, records: records)
    }

    /// Deletes delivered records (only those still held under `lease`) and remembers their idempotency keys.
    /// Returns how many were acked.
    @discardableResult
    public func ack(_ ids: [Int64], lease: Lease, now: Int64 = WallClock.nowMilliseconds()) throws(QueueError) -> Int {
        guard !ids.isEmpty else { return 0 }
        return try file.connection.write("acking records") { () throws(QueueError) in
            try ackRows(ids, lease: lease, now: now)
        }
    }

    /// Acks every delivered batch that came back since the last commit and claims up to `claims` new batches of
    /// up to `limit` records, all in one write transaction: one commit (one fsync with FULL durability) however
    /// many batches came back meanwhile. With many requests in flight the acks of one commit each cost a fsync
    /// otherwise, and the commits, serialised on the one SQLite connection, became the bottleneck
    /// (docs/PERFORMANCE.md section 9). Every ack still lands before the next claim, as soon as the connection is
    /// free, so the crash bound is unchanged: in flight plus delivered-not-acked is at most the batches handed out.
    ///
    /// Each claim has its own lease and runs after the acks; no two batches of one call hold the same user, so they
    /// can be delivered concurrently. One walk finds the rows of every batch (`walkClaimable`), so fewer batches
    /// come back when the walk reaches the end of what is claimable.
    /// Without acks the transaction is not synced, as `claim`'s is not.
    ///
    /// `halfOfUsers` (0 or 1) keeps, of the oldest request's worth, only the rows of the first or the later half of
    /// its users (a probe's rotation: a probe that always carried the oldest records would fail for good if one of
    /// them makes the sink fail, issue 40 #2). Each user's rows stay a prefix of that user's, so the per-user order
    /// holds.
    public func ackAndClaim(
        _ delivered: [(ids: [Int64], lease: Lease)], claims: Int, limit: Int, leaseMilliseconds: Int64,
        now: Int64 = WallClock.nowMilliseconds(), halfOfUsers: Int? = nil
    ) throws(QueueError) -> (acked: Int, claims: [Claim]) {
        try file.connection.write("acking and claiming records", durable: !delivered.isEmpty) {
            () throws(QueueError) in
            var acked = 0
            for batch in delivered where !batch.ids.isEmpty {
                acked += try ackRows(batch.ids, lease: batch.lease, now: now)
            }
            var result: [Claim] = []
            for ids in try walkClaimable(claims: claims, limit: limit, now: now, halfOfUsers: halfOfUsers) {
                let lease = nextLease(leaseMilliseconds: leaseMilliseconds, now: now)
                let records = try claimRows(ids, lease: lease, now: now)
                if !records.isEmpty { result.append(Claim(lease: lease, records: records)) }
            }
            return (acked, result)
        }
    }

    private func nextLease(leaseMilliseconds: Int64, now: Int64) -> Lease {
        claimSequence += 1
        return Lease(
            token: "\(consumerID)#\(claimSequence)",
            expiresAtMilliseconds: now + ClockHorizon.clamp(leaseMilliseconds))
    }

    /// Leases the rows `ids` (one batch of `walkClaimable`'s) under `lease`; the caller holds the write transaction.
    /// Returns the records to deliver (those with values out of range are dead-lettered, not returned).
    private func claimRows(_ ids: [Int64], lease: Lease, now: Int64) throws(QueueError) -> [ClaimedRecord] {
        let idList = RecordStateSQL.jsonArray(ids)
        let leasing = try file.connection.statement(RecordStateSQL.claimByIDs, operation: "claiming records")
        leasing.bind(1, lease.token)
        leasing.bind(2, lease.expiresAtMilliseconds)
        leasing.bind(3, idList)
        try leasing.run()
        let statement = try file.connection.statement(RecordStateSQL.claimedRows, operation: "reading claimed records")
        statement.bind(1, lease.token)
        statement.bind(2, idList)
        var records: [ClaimedRecord] = []
        records.reserveCapacity(min(ids.count, 1_000))
        var poisoned: [(id: Int64, reason: String)] = []
        var keyed = false
        while try statement.step() {
            if statement.int64(7) != 0 { keyed = true }
            // Every value is input from another user (see StoredRow): checked here, before anything computes
            // with it. Text is read strictly: invalid UTF-8 is never turned into U+FFFD and sent.
            let id = statement.int64(0)
            let kind = statement.validatedText(1)
            let payload = statement.validatedText(2)
            let createdAt = statement.int64(4)
            let attempts = statement.int64(5)
            if let reason = StoredRow.problem(
                id: id, kind: kind, payload: payload, createdAt: createdAt, attempts: attempts)
            {
                poisoned.append((id, reason))
                continue
            }
            guard let kind, let recordKind = RecordKind(rawValue: kind), let payload else { continue }
            var erasure: Erasure?
            if !statement.isNull(6) {
                guard let parsed = statement.validatedText(6).flatMap(Erasure.init(json:)) else {
                    poisoned.append((id, Erasure.unreadableColumnReason))
                    continue
                }
                erasure = parsed
            }
            records.append(
                ClaimedRecord(
                    id: id, kind: recordKind, payload: payload, userKey: statement.validatedText(3) ?? "",
                    createdAtMilliseconds: createdAt, attempts: Int(attempts), erasure: erasure))
        }
        if !poisoned.isEmpty {
            try deadLetterPoisoned(poisoned, lease: lease, now: now)
            deadLetteredAtClaim += poisoned.count
        }
        if !keyed {
            if keylessLeases.count >= Self.keylessLeaseLimit { keylessLeases.removeAll() }
            keylessLeases.insert(lease.token)
        }
        return records.sorted { $0.id < $1.id }
    }

    /// Dead-letters the rows the claim is about to take (`ids`, from its walk) whose payload is larger than any
    /// valid record can be (`StoredRow.maximumPayloadBytes`), before the claim's UPDATE loads them; the caller holds
    /// the transaction. Returns whether it dead-lettered any (the walk is then done again).
    ///
    /// Why here and so: a group member can insert a 200 MB payload with any SQLite client. The claim's UPDATE
    /// rewrites the row and recomputes its stored `user_key` from the whole payload (a 100 MB row: 516 MB RSS;
    /// 200 MB: 1.9 GB and 12 s, an OOM kill under a 1 GiB limit, on every start). The size is read from the row's
    /// header (`Connection.storedBytes`, 15 MB RSS and 1 ms for that row), and the dead-lettering UPDATE replaces
    /// the payload with a small stub, so it never loads the old one either (it only frees its pages). The stub
    /// names no valid user (`external_id` ""), so `dead retry` leaves it dead; the reason keeps the size.
    func refuseOversized(_ ids: [Int64], now: Int64) throws(QueueError) -> Bool {
        let connection = file.connection
        let sizes = connection.storedBytes(table: "records", column: "payload", rowids: ids)
        let oversized = ids.compactMap { id -> (id: Int64, bytes: Int)? in
            guard let bytes = sizes[id], bytes > StoredRow.maximumPayloadBytes else { return nil }
            return (id, bytes)
        }
        guard !oversized.isEmpty else { return false }
        let statement = try connection.statement(
            RecordStateSQL.deadLetterOversized, operation: "dead-lettering records too large to be read")
        for (id, bytes) in oversized {
            statement.bind(1, id)
            statement.bind(
                2, #"{"external_id":"","eventqueue_dropped_payload_bytes":\#(bytes)}"#)
            statement.bind(3, now)
            statement.bind(
                4,
                "rejected at claim: its payload is \(bytes) bytes, more than the \(StoredRow.maximumPayloadBytes) a "
                    + "record can be; it was never read, and is replaced by a stub (written by a foreign writer)")
            try statement.run()
            statement.reset()
        }
        deadLetteredAtClaim += oversized.count
        return true
    }

    /// Dead-letters claimed rows whose stored values are out of range, in the claim's transaction, with the
    /// reason. The values a CHECK could refuse are brought into range in the same statement (the reason keeps
    /// the original), so the update itself cannot fail on a row written with its checks turned off.
    private func deadLetterPoisoned(_ rows: [(id: Int64, reason: String)], lease: Lease, now: Int64) throws(QueueError)
    {
        let statement = try file.connection.statement(
            RecordStateSQL.deadLetterOutOfRange, operation: "dead-lettering records with values out of range")
        for (id, reason) in rows {
            statement.bind(1, id)
            statement.bind(2, lease.token)
            statement.bind(3, now)
            statement.bind(4, "rejected at claim: " + reason)
            try statement.run()
            statement.reset()
        }
    }

    /// The ack statements; the caller holds the write transaction. Returns how many records were deleted.
    private func ackRows(_ ids: [Int64], lease: Lease, now: Int64) throws(QueueError) -> Int {
        let connection = file.connection
        let list = RecordStateSQL.jsonArray(ids)
        if keylessLeases.remove(lease.token) == nil {
            try rememberKeys(list, lease: lease, now: now)
        }
        let delete = try connection.statement(RecordStateSQL.ack, operation: "acking records")
        delete.bind(1, list)
        delete.bind(2, lease.token)
        try delete.run()
        file.unscrubbedDeletions += connection.changes
        return connection.changes
    }

    /// The idempotency keys of the rows `list` (a JSON array of ids) still held under `lease`, remembered for the
    /// writers' later retries; the caller holds the write transaction.
    private func rememberKeys(_ list: String, lease: Lease, now: Int64) throws(QueueError) {
        let connection = file.connection
        let keys = try connection.statement(RecordStateSQL.rememberKeys, operation: "acking records")
        keys.bind(1, list)
        keys.bind(2, lease.token)
        keys.bind(3, now)
        try keys.run()
        if file.hasUserKeys {
            let userKeys = try connection.statement(RecordStateSQL.rememberUserKeys, operation: "acking records")
            userKeys.bind(1, list)
            userKeys.bind(2, lease.token)
            userKeys.bind(3, now)
            try userKeys.run()
        }
    }

    /// Returns records for a later retry at `retryAt` (Unix ms, at most `ClockHorizon` ahead of `now`). With `countsAsAttempt` the attempt count
    /// grows, and a record reaching `maxAttempts` becomes dead with `reason` as its last error. A rate limit
    /// is not the record's fault: pass `countsAsAttempt: false`.
    @discardableResult
    public func nack(
        _ ids: [Int64], lease: Lease, reason: String, retryAt: Int64, countsAsAttempt: Bool = true,
        maxAttempts: Int = 10, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> NackResult {
        guard !ids.isEmpty else { return NackResult() }
        keylessLeases.remove(lease.token)
        let connection = file.connection
        return try connection.write("returning records for retry") { () throws(QueueError) in
            let statement = try connection.statement(RecordStateSQL.nack, operation: "returning records for retry")
            statement.bind(1, RecordStateSQL.jsonArray(ids))
            statement.bind(2, lease.token)
            statement.bind(3, countsAsAttempt ? 1 : 0)
            statement.bind(4, max(1, maxAttempts))
            // Never park a record beyond the horizon: a later time would read as a clock that went back.
            statement.bind(5, min(retryAt, ClockHorizon.latestPlausible(after: now)))
            statement.bind(6, reason)
            statement.bind(7, now)
            var result = NackResult()
            while try statement.step() {
                if statement.text(1) == "dead" {
                    result.dead.append(statement.int64(0))
                } else {
                    result.retried.append(statement.int64(0))
                }
            }
            result.dead.sort()
            result.retried.sort()
            return result
        }
    }

    /// Dead-letters records the sink refused for good; they stay in the file until purged or retried.
    @discardableResult
    public func reject(
        _ ids: [Int64], lease: Lease, reason: String, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> Int {
        keylessLeases.remove(lease.token)
        return try updateLeased(RecordStateSQL.reject, "dead-lettering records", ids: ids, lease: lease) { statement in
            statement.bind(3, reason)
            statement.bind(4, now)
        }
    }

    /// Extends a lease while a slow delivery is still in flight. Returns how many records are still held: fewer
    /// than claimed means some lease expired and the records may be in someone else's hands.
    @discardableResult
    public func renew(
        _ lease: inout Lease, ids: [Int64], leaseMilliseconds: Int64, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> Int {
        let expires = now + ClockHorizon.clamp(leaseMilliseconds)
        // Not durable, as a claim: a renewal lost to a power cut only lets the lease end sooner, and the process
        // that held it is gone with the power.
        let held = try updateLeased(RecordStateSQL.renew, "renewing a lease", ids: ids, lease: lease, durable: false) {
            $0.bind(3, expires)
        }
        lease.expiresAtMilliseconds = expires
        return held
    }

    /// Gives records back without counting an attempt (a clean shutdown), so they are claimable at once.
    @discardableResult
    public func release(_ ids: [Int64], lease: Lease) throws(QueueError) -> Int {
        keylessLeases.remove(lease.token)
        return try updateLeased(RecordStateSQL.release, "releasing records", ids: ids, lease: lease, durable: false)
    }

    /// Runs one of `RecordStateSQL`'s statements over the rows `ids` still held under `lease` (?1 the ids as a JSON
    /// array, ?2 the lease token, then what `bind` adds) in a write of its own; returns how many rows it changed.
    private func updateLeased(
        _ sql: String, _ operation: String, ids: [Int64], lease: Lease, durable: Bool = true,
        bind: (Statement) -> Void = { _ in }
    ) throws(QueueError) -> Int {
        guard !ids.isEmpty else { return 0 }
        let connection = file.connection
        return try connection.write(operation, durable: durable) { () throws(QueueError) in
            let statement = try connection.statement(sql, operation: operation)
            statement.bind(1, RecordStateSQL.jsonArray(ids))
            statement.bind(2, lease.token)
            bind(statement)
            try statement.run()
            return connection.changes
        }
    }

    static func makeConsumerID() -> String {
        let random = UInt32.random(in: 0...UInt32.max)
        // The start time lets a later process tell this one from another that reused its pid (ProcessIdentity).
        let start = ProcessIdentity.ownStartTime.map { "@\($0)" } ?? ""
        return "\(hostName()):\(getpid()):\(String(random, radix: 16))\(start)"
    }

    static func hostName() -> String {
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, host.count - 1)
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
