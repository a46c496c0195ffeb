#if canImport(Glibc)
    import Glibc
#endif

/// Makes the bytes of deleted rows unreadable in the queue file and its WAL: a `VACUUM`, then a `TRUNCATE`
/// checkpoint retried until it succeeds (run by every `forget`, and by the upkeep when rows were deleted).
///
/// Why both: secure deletion zeroes deleted cells and freed pages, but a b-tree balance that moves cells to a
/// sibling leaves a stale copy in the gap; `VACUUM` writes every page again from the rows that exist. The WAL keeps
/// old page images until a `TRUNCATE` checkpoint empties it.
///
/// A `VACUUM` holds the write lock for the whole rebuild, so it is not tried when the live data cannot be copied
/// within `lockBudgetNanoseconds`, and is rolled back past it. A forget whose scrub did not happen leaves the mark
/// `QUEUE-scrub-owed` (shown by `status`); each upkeep and later forget tries again.
enum QueueScrub {
    /// The `VACUUM` rate the decision to try assumes: half of the rate measured on a 2-core machine (about 80 MB/s,
    /// docs/PERFORMANCE.md), so that a busy machine still fits the bound; the deadline enforces it either way.
    static let assumedBytesPerSecond: Int64 = 40 * 1024 * 1024
    /// Up to this much live data the vacuum's rebuilt copy is kept in memory; above it, in a temporary file.
    static let inMemoryLiveBytesLimit: Int64 = 64 * 1024 * 1024
    /// How long `forget` keeps trying to empty the WAL before it reports that it could not.
    static let forgetCheckpointDeadlineNanoseconds: UInt64 = 10_000_000_000

    /// The longest a scrub's `VACUUM` holds the write lock: a quarter of the busy timeout.
    static func lockBudgetNanoseconds(_ connection: Connection) -> UInt64 {
        UInt64(max(0, connection.busyTimeoutMilliseconds)) * 1_000_000 / 4
    }

    /// `forget`'s scrub: vacuums (within the bound) and empties the WAL; clears the mark when both happened.
    static func run(_ file: QueueFile) throws(QueueError) -> ScrubReport {
        let started = WallClock.monotonicNanoseconds()
        let vacuumed = try vacuumWithinBound(file, operation: "scrubbing deleted records")
        let truncated = try file.connection.truncateWAL(
            deadlineNanoseconds: started &+ forgetCheckpointDeadlineNanoseconds, operation: "scrubbing deleted records")
        if vacuumed && truncated { clearMark(file) }
        return ScrubReport(
            vacuumed: vacuumed, walTruncated: truncated, databaseBytes: QueueAdmin.fileSize(file.path),
            nanoseconds: WallClock.monotonicNanoseconds() &- started)
    }

    /// The upkeep's scrub: a `VACUUM` within the bound when rows were deleted or a scrub is owed, waiting at most
    /// `checkpointTryMilliseconds` for the lock. Returns true when it vacuumed; the caller truncates the WAL, then
    /// `clearMark`s.
    static func vacuumAfterPass(_ file: QueueFile) throws(QueueError) -> Bool {
        guard file.unscrubbedDeletions > 0 || owedSinceMilliseconds(file.path) != nil else { return false }
        do {
            return try file.connection.withBusyTimeout(milliseconds: Connection.checkpointTryMilliseconds) {
                () throws(QueueError) in
                try vacuumWithinBound(file, operation: "scrubbing delivered records")
            }
        } catch {
            if case .busy = error { return false }
            throw error
        }
    }

    /// `VACUUM` if the live data can be copied within the bound, given up past it. Notes the mark as it was
    /// before, so that `clearMark` keeps a mark a forget made meanwhile.
    private static func vacuumWithinBound(_ file: QueueFile, operation: String) throws(QueueError) -> Bool {
        let connection = file.connection
        file.scrubMarkBeforeVacuum = markToken(file.path)
        let budget = lockBudgetNanoseconds(connection)
        // Pages in use: what a `VACUUM` copies.
        let live = max(0, try SpaceKeeper.pages(connection, operation: operation).used &* file.pageSize())
        guard live <= Int64(budget / 1_000_000) * assumedBytesPerSecond / 1000,
            try connection.vacuum(
                operation: operation, inMemory: live <= inMemoryLiveBytesLimit, budgetNanoseconds: budget)
        else { return false }
        file.unscrubbedDeletions = 0
        return true
    }

    /// The mark that a forget's scrub is owed, a file beside the queue (so a file of any schema can carry it).
    /// Made inside the forget's transaction, so a `VACUUM` is after the deletion or before the mark; `clearMark`
    /// removes only a mark unchanged since its `VACUUM` began, told by each forget's own token.
    static func markPath(_ queuePath: String) -> String { queuePath + "-scrub-owed" }

    static func markOwed(_ queuePath: String) throws(QueueError) {
        let path = markPath(queuePath)
        let token = "\(WallClock.nowMilliseconds()) \(getpid()) \(WallClock.monotonicNanoseconds())\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o660)
        guard fd >= 0, write(fd, token, token.utf8.count) == token.utf8.count else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            throw QueueError.readOnly(
                path: queuePath,
                detail: "could not mark the scrub as owed in \(path) (\(reason)): nothing was forgotten; give the "
                    + "forgetting user write access to the queue's directory")
        }
        close(fd)
    }

    /// When the last forget whose scrub is owed ran (Unix ms, its token's first word), or `nil` when none is.
    static func owedSinceMilliseconds(_ queuePath: String) -> Int64? {
        markToken(queuePath).map { Int64($0.prefix { $0 != " " }) ?? 0 }
    }

    /// Removes the mark after a `VACUUM` and an emptied WAL, unless a forget made it new after the `VACUUM` began.
    static func clearMark(_ file: QueueFile) {
        guard let before = file.scrubMarkBeforeVacuum, markToken(file.path) == before else { return }
        unlink(markPath(file.path))
    }

    static func markToken(_ queuePath: String) -> String? {
        let fd = open(markPath(queuePath), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &bytes, bytes.count)
        return String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
    }
}

/// What a scrub did (`ForgetReport.scrub`).
public struct ScrubReport: Sendable, Hashable {
    /// The file was rebuilt (`VACUUM`): no page holds anything of a deleted row. False when it was too large to
    /// rebuild within the bound, or busy: the scrub is then owed (`QueueStats.scrubOwedSinceMilliseconds`).
    public var vacuumed: Bool
    /// The WAL was emptied (`wal_checkpoint(TRUNCATE)`); false when readers of older snapshots kept it from it.
    public var walTruncated: Bool
    /// The queue file's size afterwards.
    public var databaseBytes: Int64
    /// How long the scrub took (the `VACUUM` holds the write lock for most of it).
    public var nanoseconds: UInt64

    /// True when no byte of a deleted row is readable in the file or its WAL.
    public var bytesGone: Bool { vacuumed && walTruncated }

    /// A report of what a scrub did.
    public init(vacuumed: Bool, walTruncated: Bool, databaseBytes: Int64, nanoseconds: UInt64) {
        self.vacuumed = vacuumed
        self.walTruncated = walTruncated
        self.databaseBytes = databaseBytes
        self.nanoseconds = nanoseconds
    }
}
