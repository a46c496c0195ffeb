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
    /// Still above the size limit: `refuse` never gives accepted records up, or drop-oldest found nothing to drop.
    public var overLimit = false

    /// Nothing done yet: every count 0.
    public init() {}
}

/// The daemon's side of the limits: it records them at start, and after each pass expires what is past the max age
/// and, under drop-oldest, brings the file back under its size limit for writers that do not enforce it themselves.
extension QueueAdmin {
    /// The limits a daemon recorded and when (Unix ms), or `nil` when none did.
    public func limits() throws(QueueError) -> (limits: QueueLimits, setAtMilliseconds: Int64)? {
        guard file.hasLimits else { return nil }
        let connection = file.connection
        return try connection.read("reading the queue's limits") { () throws(QueueError) in
            try QueueLimits.read(connection).map { ($0.limits, $0.setAt) }
        }
    }

    /// Records `limits` in the file (the daemon at start): writers enforce the size limit from their next enqueue.
    public func recordLimits(_ limits: QueueLimits, now: Int64 = WallClock.nowMilliseconds()) throws(QueueError) {
        let connection = file.connection
        try connection.write("recording the queue's limits") { () throws(QueueError) -> Void in
            try connection.run(
                QueueLimitsSQL.record, operation: "recording the queue's limits", limits.maxQueueBytes,
                limits.whenFull.rawValue, limits.maxAgeSeconds, now)
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

    /// Starts counting what the queue gives up from now on this connection, unless it already does.
    public func watchDrops() throws(QueueError) {
        if file.dropsSeen == nil { file.dropsSeen = try drops() }
    }

    /// The totals now, and what grew since the last look on this connection (`watchDrops`; none the first time).
    public func dropsSinceLastLook() throws(QueueError) -> (total: QueueDrops, grown: QueueDrops) {
        let total = try drops()
        let grown = total.grown(since: file.dropsSeen ?? total)
        file.dropsSeen = total
        return (total, grown)
    }

    /// Bytes of pages in use: what the size limit bounds (`SpaceKeeper`).
    public func queueBytes() throws(QueueError) -> Int64 {
        try measure().used
    }

    /// Bytes of pages in use (what the size limit bounds) and of the whole file, in a read transaction of its own.
    func measure(_ operation: String = "measuring the queue file") throws(QueueError) -> (used: Int64, file: Int64) {
        let connection = file.connection
        let pages = try connection.read(operation) { () throws(QueueError) in try SpaceKeeper.pages(connection) }
        let pageSize = try file.pageSize()
        return (pages.used &* pageSize, pages.all &* pageSize)
    }

    /// Expires what is past the max age and, under drop-oldest, drops the oldest records until the file is within
    /// its size limit, then returns freed pages when the file on disk is above it; each step a short transaction.
    @discardableResult
    public func enforceLimits(
        now: Int64 = WallClock.nowMilliseconds(), boot: () -> BootClockReading = BootClockReading.system
    ) throws(QueueError) -> LimitEnforcement {
        var result = LimitEnforcement()
        guard let limits = try self.limits()?.limits else { return result }
        result.limits = limits
        try SpaceKeeper.applyWALBudget(file, limit: limits.maxQueueBytes > 0 ? limits.maxQueueBytes : nil)
        if limits.maxAgeSeconds > 0 {
            result.expired = try expireOldRecords(maxAgeSeconds: limits.maxAgeSeconds, now: now, boot: boot)
        }
        guard limits.maxQueueBytes > 0 else { return result }
        if limits.whenFull == .dropOldest {
            result.dropped = try dropOldestToLimit(maxBytes: limits.maxQueueBytes)
        }
        var size = try measure()
        if size.file > limits.maxQueueBytes, size.file > size.used {
            // Give freed pages back now, not at the upkeep, which waits while writers write.
            try vacuumInSteps()
            size = try measure()
        }
        result.queueBytes = size.used
        result.fileBytes = size.file
        result.overLimit = size.used > limits.maxQueueBytes
        return result
    }

    /// Records expired per transaction: short write locks whatever the backlog.
    static let expiryChunk = 1000

    /// Dead-letters pending records older than `maxAgeSeconds` on the queue clock (never leased ones, never
    /// erasures), counted as `expired`. Returns how many. The age is not `created_at_ms` (a writer's clock) but the
    /// queue clock's time since the first checkpoint that saw the record's id: a lower bound no wall-clock step can
    /// raise, and it makes the records to expire an id range, found without reading the pending rows.
    func expireOldRecords(
        maxAgeSeconds: Int64, now: Int64, boot: () -> BootClockReading
    ) throws(QueueError) -> Int {
        guard let clockNow = try tickQueueClock(now: now, boot: boot) else { return 0 }
        let (maxAge, overflow) = maxAgeSeconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return 0 }
        let connection = file.connection
        let found = try connection.read("finding records past the max age") {
            () throws(QueueError) -> (cutoff: (elapsed: Int64, maxID: Int64), stale: Bool, expirable: Bool)? in
            guard
                let cutoff = try QueueClock.checkpoint(
                    atOrBefore: QueueClock.difference(clockNow, maxAge), connection)
            else { return nil }
            let stale = try connection.scalarInt(
                QueueClockSQL.stale, operation: "reading the queue clock", cutoff.elapsed)
            let expirable = try connection.firstRow(
                RecordStateSQL.firstExpirable, operation: "finding records past the max age", cutoff.maxID
            ) { _ in true }
            return (cutoff, stale > 0, expirable ?? false)
        }
        guard let found else { return 0 }
        if found.stale {
            try connection.write("pruning the queue clock's checkpoints") { () throws(QueueError) -> Void in
                try connection.run(QueueClockSQL.prune, operation: "pruning the queue clock", found.cutoff.elapsed)
            }
        }
        guard found.expirable else { return 0 }
        let age = QueueClock.difference(clockNow, found.cutoff.elapsed) / 1000
        var expired = 0
        var after: Int64 = 0
        while true {
            let ids = try connection.write("expiring records past the max age") { () throws(QueueError) -> [Int64] in
                let ids = try connection.rows(
                    RecordStateSQL.expire, operation: "expiring records past the max age", after, found.cutoff.maxID,
                    now, Self.expiryChunk, age, maxAgeSeconds
                ) { $0.int64(0) }
                try QueueDrops.add(ids.count, cause: .expired, connection)
                return ids
            }
            expired += ids.count
            guard ids.count == Self.expiryChunk, let last = ids.max() else { return expired }
            after = last
        }
    }

    /// Advances the queue clock (`QueueClock`) and, when records were enqueued since the last checkpoint and a
    /// max age is recorded, takes one ("now, the highest id is N"), at most one per `QueueClock.spacing`; an idle
    /// queue writes nothing, but once per boot. Returns the queue time now, or `nil` before schema 8.
    ///
    /// `boot` is read again inside the write transaction: a checkpoint says the highest id at a queue time, so
    /// the time must not be read before a wait for the write lock during which writers may still append.
    @discardableResult
    public func tickQueueClock(
        now: Int64 = WallClock.nowMilliseconds(), boot: () -> BootClockReading = BootClockReading.system
    ) throws(QueueError) -> Int64? {
        guard file.hasQueueClock else { return nil }
        let connection = file.connection
        /// The highest id to record at queue time `elapsed`, when a checkpoint is due then.
        func dueCheckpoint(at elapsed: Int64) throws(QueueError) -> Int64? {
            let ids = try QueueClock.ids(connection)
            guard ids.assigned > ids.checkpointed,
                let maxAge = try QueueLimits.read(connection)?.limits.maxAgeSeconds, maxAge > 0
            else { return nil }
            let spacing = QueueClock.spacing(maxAge: maxAge.multipliedReportingOverflow(by: 1000).partialValue)
            if let last = ids.checkpointedAt, QueueClock.difference(elapsed, last) < spacing { return nil }
            return ids.assigned
        }
        let reading = boot()
        // Without a write: the same boot, and no checkpoint due.
        let unchanged = try connection.read("reading the queue clock") { () throws(QueueError) -> Int64? in
            guard let stored = try QueueClock.read(connection), stored.bootID == reading.bootID else { return nil }
            let elapsed = stored.advanced(to: reading, wall: now).elapsed
            return try dueCheckpoint(at: elapsed) == nil ? elapsed : nil
        }
        if let unchanged { return unchanged }
        return try connection.write("advancing the queue clock") { () throws(QueueError) -> Int64 in
            let reading = boot()
            let clock =
                try QueueClock.read(connection)?.advanced(to: reading, wall: now) ?? QueueClock(at: reading, wall: now)
            try clock.write(connection)
            if let maxID = try dueCheckpoint(at: clock.elapsed) {
                try connection.run(
                    QueueClockSQL.checkpoint, operation: "advancing the queue clock", clock.elapsed, maxID)
            }
            return clock.elapsed
        }
    }

    /// Drops the oldest records, a chunk per transaction (`DropPace`), until within `maxBytes` or none is left.
    func dropOldestToLimit(maxBytes: Int64) throws(QueueError) -> Int {
        let connection = file.connection
        let pageSize = try file.pageSize()
        var dropped = 0
        var pace = DropPace()
        while true {
            let count = try connection.write("dropping the oldest records to make room") { () throws(QueueError) in
                let used = try SpaceKeeper.pages(connection).used &* pageSize
                guard used > maxBytes else { return 0 }
                return try pace.drop(connection, below: Int64.max, used: used, maxBytes: maxBytes, pageSize: pageSize)
                    .dropped
            }
            guard count > 0 else { return dropped }
            dropped += count
        }
    }
}
