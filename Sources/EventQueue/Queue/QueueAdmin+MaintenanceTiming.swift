/// When the upkeep after a pass runs: not while this release's writers are writing (one of them had the turn
/// within the last `quietNanoseconds`, or during the pass).
///
/// Why: the vacuum steps and the `TRUNCATE` checkpoint hold the write lock, and run after every pass of a steady
/// stream they slowed most enqueues. While writers write, freed pages are reused and checkpoints bound the WAL, so
/// the upkeep may wait: at most `longestDeferral`, and never while the WAL is over `deferralWALBytes` or the free
/// pages over `deferralFreeBytes` (docs/PERFORMANCE.md, "Space after a backlog"). Writers of other languages do
/// not take the line, so they are not seen and never defer it.
extension QueueAdmin {
    /// The longest the upkeep waits for writers to pause.
    public static let longestDeferralNanoseconds: UInt64 = 10 * 60 * 1_000_000_000
    /// Above this WAL size the upkeep never waits.
    public static let deferralWALBytes: Int64 = 8 * 1024 * 1024
    /// Above this many bytes of free pages (a delivered backlog's) the upkeep never waits either.
    public static let deferralFreeBytes: Int64 = 8 * 1024 * 1024
    /// Writers count as writing when one had the turn this recently.
    public static let quietNanoseconds: Int64 = 50_000_000
    /// When the upkeep waited, the drain loop asks once more this much later: the last writer may have written just
    /// before the pass ended.
    public static let upkeepRetryNanoseconds: Int64 = quietNanoseconds + 10_000_000

    /// The writers' line as `status` shows it (never mapped: a group member could truncate the file under it).
    public var writeLine: WriteLineReport { WriteLineReport.read(queuePath: path) }

    /// Turns taken in the writers' line so far (nil: no usable line), read at a pass's start for `maintainAfterPass`.
    public var writerTurns: UInt64? {
        let line = writeLine
        guard case .inUse = line.state else { return nil }
        return line.handoffs
    }

    /// The upkeep (`checkpointAndVacuum`) unless it can wait (see the type's comment); nil when it waited.
    public func maintainAfterPass(
        turnsAtPassStart: UInt64?, now: Int64 = WallClock.nowMilliseconds()
    ) throws(QueueError) -> MaintenanceResult? {
        let clock = WallClock.monotonicNanoseconds()
        let line = writeLine
        let busy = line.state == .inUse(busy: true)
        let writersWrote =
            busy || (line.idleNanoseconds ?? Int64.max) < Self.quietNanoseconds
            || (turnsAtPassStart != nil && line.handoffs != turnsAtPassStart)
        let waitedSince = file.upkeepDeferredSince ?? clock
        if writersWrote, clock &- waitedSince < Self.longestDeferralNanoseconds,
            Self.fileSize(path + "-wal") <= Self.deferralWALBytes, try freeBytes() <= Self.deferralFreeBytes
        {
            file.upkeepDeferredSince = waitedSince
            return nil
        }
        file.upkeepDeferredSince = nil
        return try checkpointAndVacuum(now: now)
    }

    /// Bytes of free pages, what a vacuum would return (read from the file's header).
    func freeBytes() throws(QueueError) -> Int64 {
        let size = try measure("measuring the free pages")
        return size.file - size.used
    }
}
