/// What a process does with a queue file, which decides what it needs from the file's schema.
public enum QueueRole: String, Sendable, Hashable {
    /// Appends records (`QueueWriter`, `queuectl enqueue`, a foreign writer): needs the file's write level.
    case writer
    /// Claims, acks and dead-letters records (`QueueConsumer`): needs the file's read level.
    case consumer
}

/// The compatibility contract of docs/SCHEMA.md ("Compatibility"): which files this binary may write and consume.
///
/// Why: the writers and the daemon sharing a file come from different releases, so a binary must use a file a
/// newer release changed additively, and refuse one it did not, naming the release to upgrade to. The file records
/// two levels (`schema_levels`), like SQLite's read and write format versions: a breaking change for writers raises
/// `write_level`, one for consumers `read_level`. In a newer file the levels let in, only recorded additions that
/// cannot change the outcome of its statements are tolerated (`SchemaContract+Additions.swift`).
public enum SchemaContract {
    /// The highest write level this binary's writer implements; raise it with the migration that raises the
    /// level (a test compares both). 2: migration 8 rebuilt `records`, which a 1.1.0-1.3.0 writer refuses.
    public static let writeLevel = 2
    /// The highest read level this binary's consumer implements (3: the filing keys of migration 8).
    public static let readLevel = 3
    /// The schema version that introduced `schema_levels` and `schema_additions` (migration 5).
    public static let firstContractVersion = 5

    /// The levels a file requires, from its newest `schema_levels` row.
    public struct Levels: Sendable, Hashable {
        /// The schema version of the newest row.
        public var version: Int
        /// The write level a writer must know to append to the file.
        public var writeLevel: Int
        /// The read level a consumer must know to claim, ack and dead-letter in it.
        public var readLevel: Int
        /// The release that first carried that schema version.
        public var release: String
    }

    /// This binary's level for `role`.
    public static func level(for role: QueueRole) -> Int {
        role == .writer ? writeLevel : readLevel
    }

    /// The file's required levels, or `nil` for a file older than the contract (no `schema_levels` table).
    static func levels(_ connection: Connection) throws(QueueError) -> Levels? {
        guard try hasContractTables(connection) else { return nil }
        return try connection.firstRow(
            "SELECT version, write_level, read_level, release FROM schema_levels ORDER BY version DESC LIMIT 1",
            operation: "reading the schema levels"
        ) {
            Levels(
                version: Int($0.int64(0)), writeLevel: Int($0.int64(1)), readLevel: Int($0.int64(2)),
                release: $0.text(3) ?? "?")
        }
    }

    /// The first release whose `role` implements `level` (the oldest `schema_levels` row at or above it).
    static func firstRelease(_ connection: Connection, role: QueueRole, level: Int) throws(QueueError) -> String? {
        guard try hasContractTables(connection) else { return nil }
        let column = role == .writer ? "write_level" : "read_level"
        return try connection.scalarText(
            "SELECT release FROM schema_levels WHERE \(column) >= ?1 ORDER BY version LIMIT 1",
            operation: "reading the schema levels", level)
    }

    /// Refuses a file whose schema version is above this binary's when its `role` level is above this binary's,
    /// with the release to upgrade to; a file without levels (a hand-edited `user_version`) is refused as before.
    /// Never writes.
    static func admit(_ connection: Connection, fileVersion: Int, role: QueueRole) throws(QueueError) {
        guard fileVersion > Migrations.latestVersion else { return }
        guard let levels = try levels(connection) else {
            throw QueueError.schemaTooNew(
                path: connection.path, found: fileVersion, supported: Migrations.latestVersion)
        }
        let required = role == .writer ? levels.writeLevel : levels.readLevel
        guard required > level(for: role) else { return }
        throw QueueError.needsNewerRelease(
            path: connection.path, role: role, fileVersion: fileVersion, requiredLevel: required,
            supportedLevel: level(for: role),
            release: try firstRelease(connection, role: role, level: required))
    }

    /// The tables and indexes that migrations after `version` recorded (`schema_additions`), by name.
    static func additions(_ connection: Connection, after version: Int) throws(QueueError) -> [String: Addition] {
        guard try hasContractTables(connection) else { return [:] }
        let found = try connection.rows(
            "SELECT name, version, type, tbl_name, sql FROM schema_additions WHERE version > ?1",
            operation: "reading the schema additions", version
        ) { statement in
            Addition(
                version: Int(statement.int64(1)),
                object: QueueSchema.Object(
                    type: statement.text(2) ?? "", name: statement.text(0) ?? "", tableName: statement.text(3) ?? "",
                    sql: statement.text(4).map(QueueSchema.normalized)))
        }
        return Dictionary(found.map { ($0.object.name, $0) }, uniquingKeysWith: { $1 })
    }

    /// One row of `schema_additions`: an object a newer migration created, as that migration's binary recorded it.
    struct Addition: Sendable, Hashable {
        var version: Int
        var object: QueueSchema.Object

        /// Whether `present`, an object this binary does not know, is one of the recorded additions (same type,
        /// table and SQL; an added table's `sqlite_autoindex_*` belong to it). Whether it is tolerable is
        /// `intolerableAdditions`'s question.
        static func tolerates(_ present: QueueSchema.Object, in additions: [String: Addition]) -> Bool {
            guard present.type == "table" || present.type == "index" else { return false }
            if present.name.hasPrefix("sqlite_autoindex_"), present.type == "index" {
                return additions[present.tableName]?.object.type == "table"
            }
            guard let recorded = additions[present.name]?.object, recorded.type == present.type,
                recorded.tableName == present.tableName
            else { return false }
            return recorded.sql == present.sql
        }
    }

    private static func hasContractTables(_ connection: Connection) throws(QueueError) -> Bool {
        try connection.scalarInt(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('schema_levels', 'schema_additions')",
            operation: "looking for the schema levels") == 2
    }
}
