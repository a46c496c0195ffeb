/// The size limit inside one writer transaction (`QueueWriter.enqueue`, `enqueue(contentsOf:)`, `batch`): after each
/// record it appends, the file's logical size is compared with the limit the daemon recorded (`queue_limits`), and
/// the policy decides: `refuse` undoes the transaction and counts the refusal, `drop-oldest` deletes the oldest dead
/// letters, then the oldest pending records, until the record fits.
///
/// **What is measured.** Pages in use (`page_count - freelist_count`) times the page size, read from the pager
/// inside the transaction. It is read when the transaction begins, and again only once the records appended since
/// could have used up the room left (each counted as its payload plus `allowancePerRecord`), so a transaction far
/// below the limit measures once and opens no savepoint (docs/PERFORMANCE.md, "Limits: what a writer pays"). Not
/// `page_count`: the pages a drain frees stay in the file until the daemon's vacuum returns them, and measured with
/// them a drained queue would look full. SQLite reuses free pages before it grows the file, so the file still
/// stays near the limit; the `-wal` is bounded on its own (`walBudget`).
///
/// **Why in the writer's transaction.** The check, the drops and the insert are one `BEGIN IMMEDIATE`
/// transaction, so two writers cannot both decide there is room for one more record. Writers that do not know the
/// limit are brought back under it by the daemon after each pass (`QueueAdmin.enforceLimits`).
///
/// **How a refusal is counted for good.** A transaction that might not fit opens a savepoint before its first
/// record; a refusal rolls back to it, adds the refused records to `queue_drops`, and returns normally, so the write
/// door commits the count alone; the caller throws `QueueError.queueFull` after the commit (`LimitedWrite`).
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

    private init(
        connection: Connection, maxBytes: Int64, policy: QueueLimits.WhenFull, room: Int64, refusable: Bool,
        pageSize: Int64
    ) {
        self.connection = connection
        self.maxBytes = maxBytes
        self.policy = policy
        self.room = room
        self.refusable = refusable
        self.pageSize = pageSize
    }

    /// The keeper of a transaction that has just begun, or `nil` when no size limit is recorded (the writers' hot
    /// path: one cached statement over a one-row table). On a file before schema 7 there is no limit to read.
    /// `expecting`: the records the transaction will append and their payload bytes, when known in advance (an
    /// enqueue, `enqueue(contentsOf:)`); a transaction they surely fit in opens no savepoint. `nil` (a `batch`,
    /// read as it goes): the savepoint is always open.
    static func begin(
        _ file: QueueFile, expecting: (records: Int, payloadBytes: Int)? = nil
    ) throws(QueueError) -> SpaceKeeper? {
        guard file.hasLimits else { return nil }
        let connection = file.connection
        let statement = try connection.statement(QueueLimitsSQL.readSizeLimit, operation: "reading the size limit")
        let maxBytes = try statement.step() ? statement.int64(0) : 0
        guard maxBytes > 0 else {
            statement.reset()
            if file.walBudgetBytes != nil { try applyWALBudget(file, limit: nil) }
            return nil
        }
        if file.walBudgetBytes != walBudget(limit: maxBytes) { try applyWALBudget(file, limit: maxBytes) }
        // An unknown policy (planted with checks off) refuses: it gives nothing up.
        let policy = QueueLimits.WhenFull(rawValue: statement.text(1) ?? "") ?? .refuse
        statement.reset()
        let pageSize = try file.pageSize()
        let room = maxBytes - (try usedPages(connection) &* pageSize)
        var refusable = true
        if let expecting {
            let need = Int64(expecting.payloadBytes) + Int64(expecting.records) * allowancePerRecord * pageSize
            refusable = need > room
        }
        if refusable { try connection.statement(savepoint, operation: "enqueueing").run() }
        return SpaceKeeper(
            connection: connection, maxBytes: maxBytes, policy: policy, room: room, refusable: refusable,
            pageSize: pageSize)
    }

    /// Pages in use now, inside the transaction (`page_count - freelist_count`).
    static func usedPages(_ connection: Connection) throws(QueueError) -> Int64 {
        let operation = "measuring the queue file"
        return try connection.scalarInt("PRAGMA page_count", operation: operation)
            - connection.scalarInt("PRAGMA freelist_count", operation: operation)
    }

    /// The `-wal` a connection leaves behind under a size limit of `limit` bytes: a sixteenth of it, between 256 KiB
    /// and SQLite's own 4 MiB, so that the file and its `-wal` stay near the limit (docs/PERFORMANCE.md, "Limits").
    static func walBudget(limit: Int64) -> Int64 {
        min(max(limit / 16, 256 * 1024), 1000 * 4096)
    }

    /// Sets the connection's checkpoint interval (`wal_autocheckpoint`, in pages) and the size a reset `-wal` is
    /// cut back to (`journal_size_limit`) for `limit`, or back to the defaults without one. Connection settings:
    /// once per change of limit, not per transaction.
    static func applyWALBudget(_ file: QueueFile, limit: Int64?) throws(QueueError) {
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

    /// The file's logical size now, inside the transaction: pages in use times the page size. Cached `PRAGMA`
    /// statements, not the `pragma_page_count()` functions, which prepare their `PRAGMA` again at every call.
    static func usedBytes(_ connection: Connection) throws(QueueError) -> (used: Int64, pageSize: Int64, pages: Int64) {
        let operation = "measuring the queue file"
        let pages = try connection.scalarInt("PRAGMA page_count", operation: operation)
        let free = try connection.scalarInt("PRAGMA freelist_count", operation: operation)
        let pageSize = try connection.scalarInt("PRAGMA page_size", operation: operation)
        return ((pages - free) &* pageSize, pageSize, pages)
    }

    /// Called after each new row (`id`, its payload `payloadBytes`): true when the file is within the limit, making
    /// room first under drop-oldest (rows older than the transaction's first only). False when it cannot be: the
    /// transaction is then refused (`refusal`). Measures only once the records since the last measure could have
    /// used up the room.
    func admit(newRow id: Int64, payloadBytes: Int) throws(QueueError) -> Bool {
        guard refusal == nil else { return false }
        appended += 1
        let floor = firstRow ?? id
        firstRow = floor
        room -= Int64(payloadBytes) + Self.allowancePerRecord * pageSize
        guard room < 0 else { return true }
        var used = try Self.usedPages(connection) &* pageSize
        room = maxBytes - used
        guard used > maxBytes else { return true }
        if policy == .dropOldest {
            var pace = DropPace()
            while used > maxBytes {
                let (dropped, uncounted) = try Self.dropOldest(
                    connection, below: floor, atMost: pace.next(over: used - maxBytes))
                guard dropped > 0 else { break }
                try QueueDrops.add(uncounted, cause: .oldest, connection)
                let now = try Self.usedPages(connection) &* pageSize
                pace.record(dropped: dropped, freed: used - now)
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

    /// Deletes up to `count` of the oldest dead letters below `id`, else of the oldest pending records below it
    /// (never leased ones, never erasures). Returns how many, and how many of them to count as `oldest`: every
    /// one but the dead letters expiry made (already counted `expired`), so that each record given up is counted
    /// once, under the cause that gave it up first.
    static func dropOldest(
        _ connection: Connection, below id: Int64, atMost count: Int
    ) throws(QueueError) -> (dropped: Int, uncounted: Int) {
        let operation = "dropping the oldest records to make room"
        let dead = try connection.statement(RecordStateSQL.dropOldestDead, operation: operation, count, id)
        var dropped = 0
        var expired = 0
        while try dead.step() {
            dropped += 1
            if dead.int64(0) != 0 { expired += 1 }
        }
        dead.reset()
        if dropped > 0 { return (dropped, dropped - expired) }
        let pending = try connection.run(RecordStateSQL.dropOldestPending, operation: operation, count, id)
        return (pending, pending)
    }

    /// Records offered after the refusal, without a row (`QueueBatch`): counted refused with the others.
    func offeredAfterTheRefusal() {
        offeredAfterRefusal += 1
    }

    /// Ends the transaction's limited part. Within the limit: keeps everything. Refused: rolls back to the
    /// savepoint (nothing of the transaction stays, not even its drops) and counts refused the records it leaves
    /// unstored, once: those it appended, those offered after the refusal, and `notOffered` (the rest of an
    /// `enqueue(contentsOf:)`), never one already stored (an idempotency key already queued), in the transaction
    /// the write door commits next; returns the refusal to throw after that commit.
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

/// How many of the oldest rows drop-oldest deletes next, to free `over` bytes without dropping records that did not
/// need to go. Pages free only as whole b-tree pages empty, so the size lags behind the rows deleted and plain
/// doubling overshoots. So: 8 rows first; then at most as many as were dropped so far, and at most half of what the
/// bytes still over would take at the rate measured so far (converging on the target from below).
struct DropPace {
    private var dropped = 0
    private var freed: Int64 = 0

    func next(over: Int64) -> Int {
        guard dropped > 0 else { return 8 }
        guard freed > 0 else { return min(dropped, SpaceKeeper.largestDropChunk) }
        let estimate = over / max(1, freed / Int64(dropped))
        return Int(max(1, min(estimate / 2 + 1, Int64(min(dropped, SpaceKeeper.largestDropChunk)))))
    }

    mutating func record(dropped count: Int, freed bytes: Int64) {
        dropped += count
        freed += max(0, bytes)
    }
}

/// What a write transaction under the size limit came to. A refusal is a value, not an error, inside the write
/// door: the door commits what the body left (the refusal's count, and nothing else), and the caller throws after.
enum LimitedWrite<Value, Failure: Error> {
    case stored(Value)
    case refused(Failure)

    func get() throws(Failure) -> Value {
        switch self {
        case .stored(let value): return value
        case .refused(let error): throw error
        }
    }
}
