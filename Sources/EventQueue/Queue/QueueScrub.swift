/// Makes the bytes of deleted rows unreadable in the queue file and its WAL: a `VACUUM`, then a `TRUNCATE`
/// checkpoint retried until it succeeds. `forget` runs it every time; the upkeep after a pass runs it when rows
/// were deleted since the last scrub and the rows left are few enough (`upkeepLiveBytesLimit`).
///
/// Why both: SQLite's secure deletion (on for every connection that deletes, whatever the build's default) zeroes
/// a deleted cell and a freed page, but a b-tree balance that moves cells to a sibling page (a claim's UPDATE grows
/// a row) rebuilds the page without zeroing the gap it leaves, so a stale copy of a moved cell survives its row's
/// deletion: after a drain of 300 records with e-mail addresses among 300 dead letters, addresses were still
/// readable in the file (issue 31). `VACUUM` writes every page again from the rows that exist. The WAL keeps every
/// frame ever written (old page images with the rows in them) until a `TRUNCATE` checkpoint empties it, which has
/// to wait for readers of older snapshots. Measured costs: docs/PERFORMANCE.md, "Scrubbing deleted records".
enum QueueScrub {
    /// The most live data (pages in use) the upkeep vacuums after a pass: the time a `VACUUM` holds the write lock
    /// grows with it (about 80 MB/s on a 2-core machine, docs/PERFORMANCE.md), and writers wait for it up to their
    /// busy timeout (5 s by default). Above it the upkeep frees pages in steps as before, and what holds is less:
    /// deleted cells and freed pages are zeroed, a moved cell's stale copy may remain until a later upkeep with
    /// fewer live rows, or a `forget`, vacuums.
    static let upkeepLiveBytesLimit: Int64 = 32 * 1024 * 1024
    /// Up to this much live data the vacuum's rebuilt copy is kept in memory; above it, in a temporary file (an
    /// in-memory copy of a large queue would cost the daemon as much memory).
    static let inMemoryLiveBytesLimit: Int64 = 64 * 1024 * 1024
    /// How long one `TRUNCATE` try waits for readers (far below a writer's busy timeout: new writers wait behind it).
    static let checkpointTryMilliseconds = 100
    /// How long `forget` keeps trying to empty the WAL before it reports that it could not.
    static let forgetCheckpointDeadlineNanoseconds: UInt64 = 10_000_000_000

    /// Vacuums and empties the WAL, waiting at most `checkpointDeadlineNanoseconds` for readers of older snapshots.
    /// A busy file (another process holds the write lock for longer than the busy timeout) throws `busy`.
    static func run(_ file: QueueFile, checkpointDeadlineNanoseconds: UInt64) throws(QueueError) -> ScrubReport {
        let connection = file.connection
        let operation = "scrubbing deleted records"
        let started = WriteGate.monotonicNanoseconds()
        let live = try connection.liveBytes(operation: operation)
        try connection.vacuum(operation: operation, inMemory: live <= inMemoryLiveBytesLimit)
        file.unscrubbedDeletions = 0
        let truncated = try connection.truncateWAL(
            tryMilliseconds: checkpointTryMilliseconds, deadlineNanoseconds: started &+ checkpointDeadlineNanoseconds,
            operation: operation)
        return ScrubReport(
            vacuumed: true, walTruncated: truncated, databaseBytes: QueueAdmin.fileSize(file.path),
            nanoseconds: WriteGate.monotonicNanoseconds() &- started)
    }

    /// The upkeep's scrub: a `VACUUM` when rows were deleted since the last one and the live data is within
    /// `upkeepLiveBytesLimit`, waiting at most `busyMilliseconds` for the write lock (a busy file leaves it to the
    /// next upkeep). Returns true when it vacuumed; the caller truncates the WAL after it, as after any upkeep.
    static func vacuumAfterPass(_ file: QueueFile, busyMilliseconds: Int) throws(QueueError) -> Bool {
        guard file.unscrubbedDeletions > 0 else { return false }
        let connection = file.connection
        let operation = "scrubbing delivered records"
        let live = try connection.liveBytes(operation: operation)
        guard live <= upkeepLiveBytesLimit else { return false }
        do {
            try connection.withBusyTimeout(milliseconds: busyMilliseconds) { () throws(QueueError) in
                try connection.vacuum(operation: operation, inMemory: true)
            }
        } catch {
            if case .busy = error { return false }
            throw error
        }
        file.unscrubbedDeletions = 0
        return true
    }
}

/// What a scrub did (`ForgetReport.scrub`).
public struct ScrubReport: Sendable, Hashable {
    /// The file was rebuilt (`VACUUM`): no page holds anything of a deleted row.
    public var vacuumed: Bool
    /// The WAL was emptied (`wal_checkpoint(TRUNCATE)`): it holds no old page image. False when readers of older
    /// snapshots kept it from finishing within the deadline: forgetting again scrubs again.
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
