/// What one enforcement of the limits did (`QueueAdmin.enforceLimits`).
public struct LimitEnforcement: Sendable, Hashable {
    /// The limits in force (as recorded in the file), or `nil` when none are recorded.
    public var limits: QueueLimits?
    /// Pending records older than the max age, dead-lettered now.
    public var expired = 0
    /// The oldest records deleted to bring the file back under its size limit (drop-oldest only).
    public var dropped = 0
    /// Bytes of pages in use after it (what the limit bounds).
    public var queueBytes: Int64 = 0
    /// The file's size on disk after it (pages in use plus free pages not yet vacuumed).
    public var fileBytes: Int64 = 0
    /// Still above the size limit: `refuse` never gives accepted records up, and drop-oldest found nothing left to
    /// drop (records in delivery, erasures, remembered keys).
    public var overLimit = false

    /// Nothing done yet: every count 0.
    public init() {}
}

/// The daemon's side of the limits (issue 30): it records them at start, and after each pass and at each launch
/// expires what is older than the max age and, under drop-oldest, brings the file back under its size limit for
/// the writers that do not enforce it themselves (older releases, the C, Python and shell writers of
/// docs/WRITERS.md). Writers of this release enforce the size limit in their own transaction (`SpaceKeeper`).
extension QueueAdmin {
    /// The limits a daemon recorded and when (Unix ms), or `nil` when none did.
    public func limits() throws(QueueError) -> (limits: QueueLimits, setAtMilliseconds: Int64)? {
        guard file.hasLimits else { return nil }
        let connection = file.connection
        return try connection.read("reading the queue's limits") { () throws(QueueError) in
            try QueueLimits.read(connection).map { ($0.limits, $0.setAt) }
        }
    }

    /// Records `limits` in the file (the daemon at start): every writer of this release enforces the size limit
    /// from its next enqueue on.
    public func recordLimits(_ limits: QueueLimits, now: Int64 = WallClock.nowMilliseconds()) throws(QueueError) {
        let connection = file.connection
        try connection.write("recording the queue's limits") { () throws(QueueError) in
            let statement = try connection.statement(QueueLimitsSQL.record, operation: "recording the queue's limits")
            statement.bind(1, limits.maxQueueBytes)
            statement.bind(2, limits.whenFull.rawValue)
            statement.bind(3, limits.maxAgeSeconds)
            statement.bind(4, now)
            try statement.run()
        }
    }

    /// What the queue gave up, by cause, since the file was created (all zero before schema 7).
    public func drops() throws(QueueError) -> QueueDrops {
        guard file.hasLimits else { return QueueDrops() }
        let connection = file.connection
        return try connection.read("reading what the queue gave up") { () throws(QueueError) in
            try QueueDrops.read(connection)
        }
    }

    /// Starts counting what the queue gives up from now on this connection (the totals so far are history, not
    /// news), unless it already does.
    public func watchDrops() throws(QueueError) {
        if file.dropsSeen == nil { file.dropsSeen = try drops() }
    }

    /// The totals now, and what grew since the last look on this connection (`watchDrops`; nothing the first
    /// time): the drain loop logs the growth once per pass, whichever process gave the records up.
    public func dropsSinceLastLook() throws(QueueError) -> (total: QueueDrops, grown: QueueDrops) {
        let total = try drops()
        let grown = total.grown(since: file.dropsSeen ?? total)
        file.dropsSeen = total
        return (total, grown)
    }

    /// Bytes of pages in use: what the size limit bounds (`SpaceKeeper`).
    public func queueBytes() throws(QueueError) -> Int64 {
        let connection = file.connection
        return try connection.read("measuring the queue file") { () throws(QueueError) in
            try SpaceKeeper.usedBytes(connection).used
        }
    }

    /// Expires what is older than the max age and, under drop-oldest, drops the oldest records until the file is
    /// within its size limit, then returns freed pages to the filesystem when the file on disk is above it. Does
    /// nothing when no limits are recorded. Each step is its own short write transaction, counted in `queue_drops`
    /// in the same transaction.
    @discardableResult
    public func enforceLimits(now: Int64 = WallClock.nowMilliseconds()) throws(QueueError) -> LimitEnforcement {
        var result = LimitEnforcement()
        guard let limits = try self.limits()?.limits else { return result }
        result.limits = limits
        let budget = limits.maxQueueBytes > 0 ? SpaceKeeper.walBudget(limit: limits.maxQueueBytes) : nil
        if file.walBudgetBytes != budget {
            try SpaceKeeper.applyWALBudget(file, limit: limits.maxQueueBytes > 0 ? limits.maxQueueBytes : nil)
        }
        if limits.maxAgeSeconds > 0 {
            result.expired = try expireOldRecords(maxAgeSeconds: limits.maxAgeSeconds, now: now)
        }
        guard limits.maxQueueBytes > 0 else { return result }
        if limits.whenFull == .dropOldest {
            result.dropped = try dropOldestToLimit(maxBytes: limits.maxQueueBytes)
        }
        let connection = file.connection
        var size = try connection.read("measuring the queue file") { () throws(QueueError) in
            try SpaceKeeper.usedBytes(connection)
        }
        if size.pages &* size.pageSize > limits.maxQueueBytes, size.pages &* size.pageSize > size.used {
            // Freed pages stay in the file until vacuumed: give them back now, not at the upkeep, which waits
            // while writers write.
            try vacuumInSteps()
            size = try connection.read("measuring the queue file") { () throws(QueueError) in
                try SpaceKeeper.usedBytes(connection)
            }
        }
        result.queueBytes = size.used
        result.fileBytes = size.pages &* size.pageSize
        result.overLimit = size.used > limits.maxQueueBytes
        return result
    }

    /// Rows read (and expired) per transaction: short write locks whatever the backlog.
    static let expiryChunk = 1000

    /// Dead-letters pending records older than `maxAgeSeconds` (never leased ones, never erasures) with a reason
    /// that begins `expired:`, counted as `expired`. Returns how many.
    ///
    /// The age is counted from `created_at_ms`, the writer's clock at enqueue. A record dated in the future (its
    /// writer's clock ahead, or this clock stepped back) is not expired by its own time before that time plus the
    /// max age; one dated beyond the clock horizon (`ClockHorizon`, 15 minutes ahead), which its own time would
    /// keep for as long as the clock is off, is expired together with the records enqueued after it: ids are
    /// assigned in commit order, so when a later record is older than the max age, so is it.
    func expireOldRecords(maxAgeSeconds: Int64, now: Int64) throws(QueueError) -> Int {
        let (age, overflow) = maxAgeSeconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return 0 }
        let cutoff = now.subtractingReportingOverflow(age).overflow ? Int64.min : now - age
        let horizon = ClockHorizon.latestPlausible(after: now)
        var expired = 0
        var newestExpired: Int64 = 0
        var firstFuture: Int64?
        var after: Int64 = 0
        while true {
            let chunk = try expiryCandidates(after: after, cutoff: cutoff, horizon: horizon)
            guard let last = chunk.last else { break }
            let byDate = chunk.filter(\.old).map(\.id)
            if firstFuture == nil { firstFuture = chunk.first { !$0.old }?.id }
            if let newest = byDate.last {
                expired += try expire(byDate, sql: RecordStateSQL.expire, now: now, maxAge: maxAgeSeconds, before: nil)
                newestExpired = newest
            }
            after = last.id
            if chunk.count < Self.expiryChunk { break }
        }
        // Records dated beyond the horizon, enqueued before one that expired by its own time.
        if let firstFuture, firstFuture < newestExpired {
            after = firstFuture - 1
            while after < newestExpired {
                let chunk = try expiryCandidates(after: after, cutoff: Int64.min, horizon: horizon)
                let ids = chunk.map(\.id).filter { $0 < newestExpired }
                if !ids.isEmpty {
                    expired += try expire(
                        ids, sql: RecordStateSQL.expireAfterLaterRecord, now: now, maxAge: maxAgeSeconds,
                        before: newestExpired)
                }
                guard let last = chunk.last, chunk.count == Self.expiryChunk else { break }
                after = last.id
            }
        }
        return expired
    }

    private func expiryCandidates(
        after: Int64, cutoff: Int64, horizon: Int64
    ) throws(QueueError) -> [(id: Int64, old: Bool)] {
        let connection = file.connection
        return try connection.read("finding records past the max age") { () throws(QueueError) in
            let statement = try connection.statement(
                RecordStateSQL.expiryCandidates, operation: "finding records past the max age")
            defer { statement.reset() }
            statement.bind(1, after)
            statement.bind(2, cutoff)
            statement.bind(3, horizon)
            statement.bind(4, Self.expiryChunk)
            var rows: [(id: Int64, old: Bool)] = []
            while try statement.step() { rows.append((statement.int64(0), statement.int64(1) != 0)) }
            return rows
        }
    }

    private func expire(
        _ ids: [Int64], sql: String, now: Int64, maxAge: Int64, before: Int64?
    ) throws(QueueError) -> Int {
        let connection = file.connection
        return try connection.write("expiring records past the max age") { () throws(QueueError) in
            let statement = try connection.statement(sql, operation: "expiring records past the max age")
            statement.bind(1, RecordStateSQL.jsonArray(ids))
            statement.bind(2, now)
            statement.bind(3, maxAge)
            if let before { statement.bind(4, before) }
            try statement.run()
            let count = connection.changes
            try QueueDrops.add(count, cause: .expired, connection)
            return count
        }
    }

    /// Drops the oldest dead letters, then the oldest pending records, a chunk per transaction (`DropPace`, as a
    /// writer does), until the pages in use are within `maxBytes` or nothing is left to drop. Returns how many.
    func dropOldestToLimit(maxBytes: Int64) throws(QueueError) -> Int {
        let connection = file.connection
        var dropped = 0
        var pace = DropPace()
        while true {
            let count = try connection.write("dropping the oldest records to make room") { () throws(QueueError) in
                let used = try SpaceKeeper.usedBytes(connection).used
                guard used > maxBytes else { return 0 }
                let (count, uncounted) = try SpaceKeeper.dropOldest(
                    connection, below: Int64.max, atMost: pace.next(over: used - maxBytes))
                try QueueDrops.add(uncounted, cause: .oldest, connection)
                pace.record(dropped: count, freed: used - (try SpaceKeeper.usedBytes(connection).used))
                return count
            }
            guard count > 0 else { return dropped }
            dropped += count
        }
    }
}
