#if canImport(Glibc)
    import Glibc
#endif

/// An open queue file: a configured connection to a file whose schema this binary can use in its role.
///
/// Every short-lived writer pays the open, so it is a handful of statements: the schema version, the pragmas,
/// and a migration only for a new file or an older one opened by a consumer.
final class QueueFile {
    let connection: Connection
    let options: QueueOptions
    var path: String { connection.path }

    /// How much of the schema an open compares with the one the migrations create (`QueueSchema`): a writer, names
    /// and types and no trigger or view (one statement); a consumer (the daemon, an admin), every object's definition.
    /// Consumers alone migrate an existing file.
    let role: QueueRole
    /// Since when the upkeep after a pass has waited for writers to pause (`QueueAdmin.maintainAfterPass`).
    var upkeepDeferredSince: UInt64?
    /// Rows this connection deleted since its last `VACUUM`, whose bytes the upkeep scrubs. Unknown at open (an
    /// earlier process may have stopped before its upkeep), so the first upkeep scrubs.
    var unscrubbedDeletions = 1
    /// The token of the mark of an owed scrub when this connection's last `VACUUM` began (`QueueScrub.clearMark`).
    var scrubMarkBeforeVacuum: String?
    /// Whether the file has per-user idempotency keys (schema 6 and later).
    private(set) var hasUserKeys = false
    /// Whether the file has `queue_limits` and `queue_drops` (schema 7 and later).
    private(set) var hasLimits = false
    /// Whether the file has the queue clock (schema 8), by which the max age is measured.
    private(set) var hasQueueClock = false
    /// The `-wal` budget applied for the size limit last seen (`SpaceKeeper.applyWALBudget`); `nil`: none seen.
    var walBudgetBytes: Int64?
    /// The page size, read once (it never changes for a WAL file): the size limit's measure multiplies by it.
    private var cachedPageSize: Int64?

    func pageSize() throws(QueueError) -> Int64 {
        if let cachedPageSize { return cachedPageSize }
        let size = max(512, try connection.scalarInt("PRAGMA page_size", operation: "reading the page size"))
        cachedPageSize = size
        return size
    }

    /// What the queue had given up when the daemon last looked (`QueueAdmin.dropsSinceLastLook`).
    var dropsSeen: QueueDrops?

    init(path: String, options: QueueOptions, role: QueueRole = .writer) throws(QueueError) {
        self.options = options
        self.role = role
        connection = try Connection(path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        let started = WallClock.monotonicNanoseconds()
        let budget = UInt64(max(0, min(options.busyTimeoutMilliseconds, Int(Int32.max)))) * 1_000_000
        while true {
            do throws(QueueError) {
                try configure()
                return
            } catch .busy where WallClock.monotonicNanoseconds() &- started < budget {
                // Some of SQLite's lock conflicts while openers of a new file create it and switch it to WAL
                // answer SQLITE_BUSY without calling the busy handler (seen with 8 at once): every step of
                // configure() can run again, so wait as the handler would have, up to the same timeout.
                var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
                nanosleep(&pause, nil)
            } catch {
                connection.close()
                throw error
            }
        }
    }

    private func configure() throws(QueueError) {
        // Read first: a foreign file (SQLITE_NOTADB) and a newer schema are found before anything could write.
        let version = try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version")
        try SchemaContract.admit(connection, fileVersion: Int(version), role: role)
        if options.verifyIntegrityOnOpen, version > 0 {
            try verifyIntegrity()
        }
        if version == 0 {
            // Only before the first table exists: incremental vacuum, so a drain's space can be given back.
            try connection.execute("PRAGMA auto_vacuum = INCREMENTAL", operation: "configuring auto_vacuum")
        }
        let mode = try connection.scalarText("PRAGMA journal_mode = WAL", operation: "enabling WAL")
        guard mode?.lowercased() == "wal" else {
            throw QueueError.cannotOpen(
                path: path, reason: "could not switch to WAL mode (journal_mode is \(mode ?? "unknown"))")
        }
        // Durability is the write door's: commits run with NORMAL, and a durable write syncs after (Connection.write).
        try connection.execute("PRAGMA synchronous = NORMAL", operation: "setting durability")
        connection.gate.syncsCommits = options.durability == .full
        connection.gate.waitsInLine = role == .writer && options.waitsInLine
        _ = try connection.scalarInt(
            "PRAGMA journal_size_limit = \(options.journalSizeLimitBytes)", operation: "setting journal_size_limit")
        // Statement journals (every multi-row UPDATE inside a transaction keeps one) and the claim's id list stay
        // in memory: on disk each would be a temp file created, written and unlinked per batch.
        try connection.execute("PRAGMA temp_store = MEMORY", operation: "keeping temporary data in memory")
        var schema = Int(version)
        if version == 0 || (version < Migrations.latestVersion && role == .consumer) {
            // An existing file is moved forward only by a consumer, so that an app's newer writer never moves a
            // served file past what its daemon consumes.
            try Migrations.migrate(connection)
            schema = Migrations.latestVersion
        }
        hasUserKeys = schema >= Self.userKeysVersion
        hasLimits = schema >= Self.limitsVersion
        hasQueueClock = schema >= Self.queueClockVersion
        // The schema (QueueSchema) and the level with it: a newer release may migrate the file while this is open.
        let (role, full) = (role, role == .consumer)
        let check = { (connection: Connection) throws(QueueError) in
            let version = try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version")
            try SchemaContract.admit(connection, fileVersion: Int(version), role: role)
            let verify = full ? QueueSchema.verify : QueueSchema.verifyNames
            try verify(connection, Migrations.latestVersion)
        }
        // One snapshot for the version and the objects: a consumer may be migrating the file meanwhile.
        try connection.read("checking the schema") { () throws(QueueError) in
            try check(connection)
        }
        connection.schemaGuard = (
            check, try connection.scalarInt("PRAGMA schema_version", operation: "reading the schema cookie")
        )
        if role == .consumer {
            // Consumers and admins delete records: SQLite zeroes what they delete (Debian's build does by default,
            // another may not), so no deleted cell or freed page keeps a record's bytes (QueueScrub).
            try connection.execute("PRAGMA secure_delete = ON", operation: "turning on secure deletion")
            // A row a foreign writer stored with its checks turned off fails them again on any UPDATE, so the
            // consumer could never lease or dead-letter it, and every claim would fail. The consumer's own
            // updates keep every value in range by construction (StoredRow); the table's checks are for writers.
            try connection.execute(
                "PRAGMA ignore_check_constraints = ON", operation: "letting the consumer update any stored row")
        }
    }

    /// The schema version that scoped idempotency keys to the user (Migrations/0006_user_keys.sql).
    static let userKeysVersion = 6
    /// The schema version that added the limits and `records.erasure` (Migrations/0007_limits_and_erasure.sql).
    static let limitsVersion = 7
    /// The schema version that added the queue clock (Migrations/0008_identity_keys_and_queue_clock.sql).
    static let queueClockVersion = 8

    func close() {
        connection.close()
    }

    /// `PRAGMA quick_check`: every page read and each b-tree checked, before a write could land next to damage.
    private func verifyIntegrity() throws(QueueError) {
        // A row that breaks a CHECK (a foreign writer with its checks off) is not damage: the consumer
        // dead-letters it with the reason (StoredRow). Refusing the file for it would stop all delivery.
        try connection.execute("PRAGMA ignore_check_constraints = ON", operation: "checking the file's integrity")
        defer { try? connection.execute("PRAGMA ignore_check_constraints = OFF", operation: "checking integrity") }
        let messages = try connection.rows("PRAGMA quick_check(5)", operation: "checking the file's integrity") {
            $0.text(0) ?? ""
        }
        guard messages != ["ok"] else { return }
        throw QueueError.corrupt(path: path, detail: "quick_check: " + messages.joined(separator: "; "))
    }

    /// Refuses new records while free space is below the reserve, leaving room for acks and checkpoints.
    func checkFreeSpaceReserve() throws(QueueError) {
        guard options.minimumFreeBytes > 0 else { return }
        var stats = statvfs()
        guard statvfs(QueuePath.directoryName(of: path), &stats) == 0 else { return }
        let free = Int64(stats.f_bavail) * Int64(stats.f_frsize)
        guard free < options.minimumFreeBytes else { return }
        throw QueueError.diskFull(
            path: path,
            detail: "\(free) bytes free, below the \(options.minimumFreeBytes)-byte reserve kept for draining "
                + "(EVENTQUEUE_MIN_FREE_BYTES)")
    }
}
