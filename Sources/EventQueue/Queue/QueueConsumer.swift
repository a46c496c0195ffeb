#if canImport(Glibc)
    import Glibc
#endif

/// The consumer side of a queue, the lease protocol and nothing else: claim records under a lease, then ack, nack
/// or reject them (counts and upkeep are `QueueAdmin`'s). Use from one thread at a time.
///
/// Every state change commits in one write transaction, and the lease is a timestamp and owner in the file: a
/// consumer killed at any point leaves its records to be claimed again once the lease expires, or at once by a
/// consumer on this host that sees its process gone (`releaseLeasesOfDeadProcesses`). A user's records are claimed
/// in id order, never while an earlier one waits for a retry or is in flight.
public final class QueueConsumer {
    let file: QueueFile
    /// Identifies this consumer in lease tokens: host, pid and a random part.
    public let consumerID: String
    private var claimSequence: UInt64 = 0
    /// Rows this consumer's claims dead-lettered instead of returning (the drain loop counts them in its pass).
    public private(set) var deadLetteredAtClaim = 0
    /// Leases whose rows carry no idempotency key, seen at their claim: their ack skips the two statements that
    /// remember keys (a row's keys never change while it is leased). Forgotten when the lease is settled; a lease
    /// never settled stays until `keylessLeaseLimit`.
    private var keylessLeases: Set<String> = []
    private static let keylessLeaseLimit = 10_000

    /// Opens the queue at `path` as a consumer, with the full schema check. `consumerID` names it in leases and the
    /// drain lock (default: host, pid and a random part, so a restart here can release a dead one's leases).
    public init(path: String, options: QueueOptions = QueueOptions(), consumerID: String? = nil) throws(QueueError) {
        file = try QueueFile(path: path, options: options, role: .consumer)
        self.consumerID = consumerID ?? QueueConsumer.makeConsumerID()
        // A claim walks the live rows and probes each user's index: with SQLite's default 2 MB page cache a big
        // backlog's pages are read again from the OS on every claim. One consumer per process: 32 MB at most.
        try file.connection.execute("PRAGMA cache_size = -32768", operation: "sizing the page cache")
    }

    /// The queue file's path.
    public var path: String { file.path }

    /// Closes the connection; the last connection to close checkpoints and removes the `-wal` file.
    public func close() {
        file.close()
    }

    /// Claims up to `limit` claimable records, oldest first, leasing them for `leaseMilliseconds` (`ClockHorizon`).
    public func claim(
        limit: Int, leaseMilliseconds: Int64, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> Claim {
        let lease = nextLease(leaseMilliseconds: leaseMilliseconds, now: now)
        // Not durable: a claim lost to a power cut only makes its records claimable again; the ack syncs it.
        let records = try file.connection.write("claiming records", durable: false) {
            () throws(QueueError) -> [ClaimedRecord] in
            guard let ids = try walkClaimable(claims: 1, limit: limit, now: now).first else { return [] }
            return try claimRows(ids, lease: lease, now: now)
        }
        return Claim(lease: lease, records: records)
    }

    /// Deletes delivered records still held under `lease`, remembering their idempotency keys; returns how many.
    @discardableResult
    public func ack(_ ids: [Int64], lease: Lease, now: Int64 = WallClock.nowMilliseconds()) throws(QueueError) -> Int {
        guard !ids.isEmpty else { return 0 }
        return try file.connection.write("acking records") { () throws(QueueError) in
            try ackRows(ids, lease: lease, now: now)
        }
    }

    /// Acks every batch delivered since the last commit and claims up to `claims` new batches of up to `limit`
    /// records in one write transaction: one fsync however many came back (none without acks, as `claim`). Every
    /// ack lands before the next claim, so in flight plus delivered-not-acked stays at most the batches handed out.
    /// Each claim has its own lease, and no two share a user, so they can be delivered concurrently.
    ///
    /// `halfOfUsers` (0 or 1) keeps only the first or later half of the oldest request's users (a probe's rotation,
    /// so that one record that fails the sink cannot fail every probe); each user's rows stay a prefix, in order.
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

    /// Leases the rows `ids` (one batch of `walkClaimable`'s) under `lease`, in the caller's transaction; returns
    /// the records to deliver (those with values out of range are dead-lettered).
    private func claimRows(_ ids: [Int64], lease: Lease, now: Int64) throws(QueueError) -> [ClaimedRecord] {
        let idList = RecordStateSQL.jsonArray(ids)
        try file.connection.run(
            RecordStateSQL.claimByIDs, operation: "claiming records", lease.token, lease.expiresAtMilliseconds, idList)
        let statement = try file.connection.statement(
            RecordStateSQL.claimedRows, operation: "reading claimed records", lease.token, idList)
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
        for (id, reason) in poisoned {
            try file.connection.run(
                RecordStateSQL.deadLetterOutOfRange, operation: "dead-lettering records with values out of range", id,
                lease.token, now, "rejected at claim: " + reason)
        }
        deadLetteredAtClaim += poisoned.count
        if !keyed {
            if keylessLeases.count >= Self.keylessLeaseLimit { keylessLeases.removeAll() }
            keylessLeases.insert(lease.token)
        }
        return records.sorted { $0.id < $1.id }
    }

    /// Dead-letters the walk's rows (`ids`) whose payload is larger than any valid record can be, before the
    /// claim's UPDATE loads them; returns whether it did (the walk is then done again). Why: a group member can
    /// insert a 200 MB payload, and the UPDATE would recompute its `user_key` from all of it. The size is read from
    /// the row's header and the payload replaced by a stub naming no user (so `dead retry` leaves it dead).
    func refuseOversized(_ ids: [Int64], now: Int64) throws(QueueError) -> Bool {
        let connection = file.connection
        let sizes = connection.storedBytes(table: "records", column: "payload", rowids: ids)
        let oversized = ids.compactMap { id -> (id: Int64, bytes: Int)? in
            guard let bytes = sizes[id], bytes > StoredRow.maximumPayloadBytes else { return nil }
            return (id, bytes)
        }
        guard !oversized.isEmpty else { return false }
        for (id, bytes) in oversized {
            try connection.run(
                RecordStateSQL.deadLetterOversized, operation: "dead-lettering records too large to be read", id,
                #"{"external_id":"","eventqueue_dropped_payload_bytes":\#(bytes)}"#, now,
                "rejected at claim: its payload is \(bytes) bytes, more than the \(StoredRow.maximumPayloadBytes) a "
                    + "record can be; it was never read, and is replaced by a stub (written by a foreign writer)")
        }
        deadLetteredAtClaim += oversized.count
        return true
    }

    /// The ack statements (the keys remembered first, unless the lease's rows carry none); the caller holds the
    /// write transaction. Returns how many records were deleted.
    private func ackRows(_ ids: [Int64], lease: Lease, now: Int64) throws(QueueError) -> Int {
        let connection = file.connection
        let list = RecordStateSQL.jsonArray(ids)
        if keylessLeases.remove(lease.token) == nil {
            try connection.run(RecordStateSQL.rememberKeys, operation: "acking records", list, lease.token, now)
            if file.hasUserKeys {
                try connection.run(
                    RecordStateSQL.rememberUserKeys, operation: "acking records", list, lease.token, now)
            }
        }
        let deleted = try connection.run(RecordStateSQL.ack, operation: "acking records", list, lease.token)
        file.unscrubbedDeletions += deleted
        return deleted
    }

    /// Returns records for a later retry at `retryAt` (Unix ms, at most `ClockHorizon` ahead of `now`). With
    /// `countsAsAttempt` the attempt count grows, and a record reaching `maxAttempts` becomes dead with `reason` as
    /// its last error. A rate limit is not the record's fault: pass `countsAsAttempt: false`.
    @discardableResult
    public func nack(
        _ ids: [Int64], lease: Lease, reason: String, retryAt: Int64, countsAsAttempt: Bool = true,
        maxAttempts: Int = 10, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> NackResult {
        guard !ids.isEmpty else { return NackResult() }
        keylessLeases.remove(lease.token)
        let connection = file.connection
        return try connection.write("returning records for retry") { () throws(QueueError) in
            // Never park a record beyond the horizon (?5): a later time would read as a clock that went back.
            let rows = try connection.rows(
                RecordStateSQL.nack, operation: "returning records for retry", RecordStateSQL.jsonArray(ids),
                lease.token, countsAsAttempt ? 1 : 0, max(1, maxAttempts),
                min(retryAt, ClockHorizon.latestPlausible(after: now)), reason, now
            ) { (id: $0.int64(0), dead: $0.text(1) == "dead") }
            return NackResult(
                retried: rows.filter { !$0.dead }.map(\.id).sorted(), dead: rows.filter(\.dead).map(\.id).sorted())
        }
    }

    /// Dead-letters records the sink refused for good; they stay in the file until purged or retried.
    @discardableResult
    public func reject(
        _ ids: [Int64], lease: Lease, reason: String, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> Int {
        keylessLeases.remove(lease.token)
        return try updateLeased(RecordStateSQL.reject, "dead-lettering records", ids: ids, lease: lease, reason, now)
    }

    /// Extends a lease while a slow delivery is in flight. Returns how many records are still held (fewer: some
    /// lease expired, and they may be in someone else's hands).
    @discardableResult
    public func renew(
        _ lease: inout Lease, ids: [Int64], leaseMilliseconds: Int64, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> Int {
        let expires = now + ClockHorizon.clamp(leaseMilliseconds)
        let held = try updateLeased(
            RecordStateSQL.renew, "renewing a lease", ids: ids, lease: lease, durable: false, expires)
        lease.expiresAtMilliseconds = expires
        return held
    }

    /// Gives records back without counting an attempt (a clean shutdown), so they are claimable at once.
    @discardableResult
    public func release(_ ids: [Int64], lease: Lease) throws(QueueError) -> Int {
        keylessLeases.remove(lease.token)
        return try updateLeased(RecordStateSQL.release, "releasing records", ids: ids, lease: lease, durable: false)
    }

    /// Runs a `RecordStateSQL` statement (?1 `ids`, ?2 the lease token, then `more`) in a write of its own.
    private func updateLeased(
        _ sql: String, _ operation: String, ids: [Int64], lease: Lease, durable: Bool = true,
        _ more: (any SQLValue)?...
    ) throws(QueueError) -> Int {
        guard !ids.isEmpty else { return 0 }
        let connection = file.connection
        return try connection.write(operation, durable: durable) { () throws(QueueError) in
            try connection.run(sql, operation: operation, values: [RecordStateSQL.jsonArray(ids), lease.token] + more)
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
