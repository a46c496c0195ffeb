/// The size limit inside one writer transaction: after each record it appends, the file's logical size is compared
/// with the limit the daemon recorded (`queue_limits`); `refuse` undoes the transaction and counts the refusal,
/// `drop-oldest` deletes the oldest dead letters, then the oldest pending records, until the record fits. In the
/// writer's own transaction, so that two writers cannot both decide there is room for one more record.
///
/// Measured: pages in use (`page_count - freelist_count`), not `page_count`, since the pages a drain frees stay in
/// the file until the vacuum, and SQLite reuses them before it grows the file. Measured again only once the records
/// appended since could have used up the room left, so a transaction far below the limit measures once.
///
/// A transaction that might not fit opens a savepoint; a refusal rolls back to it and counts the refused records,
/// so the write door commits the count alone, and the caller throws `queueFull` after the commit (a `Result`).
final class SpaceKeeper {
    let connection: Connection
    let maxBytes: Int64
    let policy: QueueLimits.WhenFull
    /// Records this transaction appended (pending or dead), for the refusal's count.
    private(set) var appended = 0
    /// Records offered after the refusal (a `batch` body that goes on): left unstored too.
    private var offeredAfterRefusal = 0
    /// The id of the transaction's first new row: drop-oldest drops only rows below it, never the transaction's
    /// own, so that every id a batch returns names a stored record.
    private var firstRow: Int64?
    /// Set once the transaction cannot stay within the limit: it commits nothing but the refusal's count.
    private(set) var refusal: QueueError?
    /// Bytes the transaction may still append, as records and their allowance, before it measures again.
    private var room: Int64
    /// Whether the savepoint is open: only a transaction that might not fit can be refused.
    private let refusable: Bool
    private let pageSize: Int64

    /// What one insert can add in pages besides its payload: a row touches the table and at most five indexes, a
    /// b-tree insert allocates at most two pages per level, five levels deep for a file of terabytes: 60 pages.
    static let allowancePerRecord: Int64 = 64

    private static let savepoint = "SAVEPOINT eventqueue_limit"
    private static let rollback = "ROLLBACK TO eventqueue_limit"
    private static let release = "RELEASE eventqueue_limit"
    /// The most rows drop-oldest deletes in one statement (`DropPace`).
    static let largestDropChunk = 4096

    /// The keeper of a transaction that has just begun, or `nil` when no size limit is recorded (the writers' hot
    /// path: one cached statement). `expecting`: the records and payload bytes the transaction will append, when
    /// known in advance; a transaction they surely fit in opens no savepoint (`nil`, a `batch`: always one).
    static func begin(
        _ file: QueueFile, expecting: (records: Int, payloadBytes: Int)? = nil
    ) throws(QueueError) -> SpaceKeeper? {
        guard file.hasLimits else { return nil }
        let statement = try file.connection.statement(
            QueueLimitsSQL.readSizeLimit, operation: "reading the size limit")
        let maxBytes = try statement.step() ? statement.int64(0) : 0
        guard maxBytes > 0 else {
            statement.reset()
            try applyWALBudget(file, limit: nil)
            return nil
        }
        try applyWALBudget(file, limit: maxBytes)
        // An unknown policy (planted with checks off) refuses: it gives nothing up.
        let policy = QueueLimits.WhenFull(rawValue: statement.text(1) ?? "") ?? .refuse
        statement.reset()
        return try SpaceKeeper(file, maxBytes: maxBytes, policy: policy, expecting: expecting)
    }

    private init(
        _ file: QueueFile, maxBytes: Int64, policy: QueueLimits.WhenFull, expecting: (records: Int, payloadBytes: Int)?
    ) throws(QueueError) {
        connection = file.connection
        self.maxBytes = maxBytes
        self.policy = policy
        pageSize = try file.pageSize()
        room = maxBytes - (try Self.pages(connection).used &* pageSize)
        if let expecting {
            let need = Int64(expecting.payloadBytes) + Int64(expecting.records) * Self.allowancePerRecord * pageSize
            refusable = need > room
        } else {
            refusable = true
        }
        if refusable { try connection.statement(Self.savepoint, operation: "enqueueing").run() }
    }

    /// Pages in use (`page_count - freelist_count`: what the limit bounds) and in all, by cached `PRAGMA`
    /// statements (`pragma_page_count()` prepares every call).
    static func pages(
        _ connection: Connection, operation: String = "measuring the queue file"
    ) throws(QueueError) -> (used: Int64, all: Int64) {
        let all = try connection.scalarInt("PRAGMA page_count", operation: operation)
        return (all - (try connection.scalarInt("PRAGMA freelist_count", operation: operation)), all)
    }

    /// The `-wal` a connection leaves behind under a size limit of `limit` bytes: a sixteenth of it, between 256 KiB
    /// and SQLite's own 4 MiB, so that the file and its `-wal` stay near the limit (docs/PERFORMANCE.md, "Limits").
    static func walBudget(limit: Int64) -> Int64 {
        min(max(limit / 16, 256 * 1024), 1000 * 4096)
    }

    /// Sets `wal_autocheckpoint` and `journal_size_limit` for `limit` (or the defaults without one), once per
    /// change of limit.
    static func applyWALBudget(_ file: QueueFile, limit: Int64?) throws(QueueError) {
        guard file.walBudgetBytes != limit.map(walBudget) else { return }
        let connection = file.connection
        let operation = "sizing the write-ahead log for the size limit"
        guard let limit else {
            _ = try connection.scalarInt("PRAGMA wal_autocheckpoint = 1000", operation: operation)
            _ = try connection.scalarInt(
                "PRAGMA journal_size_limit = \(file.options.journalSizeLimitBytes)", operation: operation)
            file.walBudgetBytes = nil
            return
        }
        let budget = walBudget(limit: limit)
        let pageSize = try file.pageSize()
        _ = try connection.scalarInt("PRAGMA wal_autocheckpoint = \(budget / pageSize)", operation: operation)
        _ = try connection.scalarInt(
            "PRAGMA journal_size_limit = \(min(budget, Int64(file.options.journalSizeLimitBytes)))",
            operation: operation)
        file.walBudgetBytes = budget
    }

    /// Called after each new row: true when the file is within the limit, making room first under drop-oldest
    /// (rows older than the transaction's first only); false when it cannot be, and the transaction is refused.
    func admit(newRow id: Int64, payloadBytes: Int) throws(QueueError) -> Bool {
        guard refusal == nil else { return false }
        appended += 1
        let floor = firstRow ?? id
        firstRow = floor
        room -= Int64(payloadBytes) + Self.allowancePerRecord * pageSize
        guard room < 0 else { return true }
        var used = try Self.pages(connection).used &* pageSize
        room = maxBytes - used
        guard used > maxBytes else { return true }
        if policy == .dropOldest {
            var pace = DropPace()
            while used > maxBytes {
                let (dropped, now) = try pace.drop(
                    connection, below: floor, used: used, maxBytes: maxBytes, pageSize: pageSize)
                guard dropped > 0 else { break }
                used = now
            }
            room = maxBytes - used
            if used <= maxBytes { return true }
        }
        // Not refusable: the room measured at the start held every record and its allowance, so this cannot
        // happen unless an insert took more than the allowance; the record is kept rather than half a batch.
        guard refusable else { return true }
        refusal = .queueFull(
            path: connection.path, limitBytes: maxBytes,
            detail: policy == .refuse
                ? "this record would take it to \(used) bytes of pages in use, past its limit of \(maxBytes) bytes "
                    + "(queued --max-queue-bytes, --when-full refuse)"
                : "even with every dead letter and pending record before this transaction dropped, this record "
                    + "would take it to \(used) bytes, past its limit of \(maxBytes) bytes (queued --max-queue-bytes, "
                    + "--when-full drop-oldest): the rest is this transaction's own records (never dropped), records "
                    + "in delivery, erasures, remembered idempotency keys and the file's own tables")
        return false
    }

    func offeredAfterTheRefusal() {
        offeredAfterRefusal += 1
    }

    /// Ends the transaction's limited part. Refused: rolls back to the savepoint (its drops too), counts every record
    /// left unstored (appended, offered after, `notOffered`) refused, and returns the refusal.
    func finish(notOffered: Int = 0) throws(QueueError) -> QueueError? {
        guard let refusal else {
            if refusable { try connection.statement(Self.release, operation: "enqueueing").run() }
            return nil
        }
        try connection.statement(Self.rollback, operation: "refusing records for the size limit").run()
        try connection.statement(Self.release, operation: "refusing records for the size limit").run()
        try QueueDrops.add(appended + offeredAfterRefusal + notOffered, cause: .refused, connection)
        return refusal
    }
}

/// How many of the oldest rows drop-oldest deletes next, to free `over` bytes without dropping more than needed:
/// pages free only as whole b-tree pages empty, so plain doubling overshoots. 8 rows first, then at most as many as
/// dropped so far and half of what the bytes still over would take at the rate so far (from below).
struct DropPace {
    private var dropped = 0
    private var freed: Int64 = 0

    private func next(over: Int64) -> Int {
        guard dropped > 0 else { return 8 }
        guard freed > 0 else { return min(dropped, SpaceKeeper.largestDropChunk) }
        let estimate = over / max(1, freed / Int64(dropped))
        return Int(max(1, min(estimate / 2 + 1, Int64(min(dropped, SpaceKeeper.largestDropChunk)))))
    }

    /// Deletes the next chunk of the oldest dead letters below `id`, else of the oldest pending records, in the
    /// caller's transaction, while `used` bytes of pages are in use. Counts as `oldest` all but the dead letters
    /// expiry made (already counted `expired`). Returns how many went (0: nothing left) and the bytes in use after.
    mutating func drop(
        _ connection: Connection, below id: Int64, used: Int64, maxBytes: Int64, pageSize: Int64
    ) throws(QueueError) -> (dropped: Int, used: Int64) {
        let operation = "dropping the oldest records to make room"
        let count = next(over: used - maxBytes)
        let expired = try connection.rows(RecordStateSQL.dropOldestDead, operation: operation, count, id) {
            $0.int64(0) != 0
        }
        let chunk =
            expired.isEmpty
            ? try connection.run(RecordStateSQL.dropOldestPending, operation: operation, count, id) : expired.count
        guard chunk > 0 else { return (0, used) }
        try QueueDrops.add(expired.isEmpty ? chunk : expired.count(where: { !$0 }), cause: .oldest, connection)
        let now = try SpaceKeeper.pages(connection).used &* pageSize
        dropped += chunk
        freed += max(0, used - now)
        return (chunk, now)
    }
}
