/// One numbered schema step from `Migrations/NNNN_name.sql`.
public struct Migration: Sendable, Hashable {
    /// The schema version it brings a file to (`NNNN`).
    public let version: Int
    /// What it does, from the file name (`user_order_index`).
    public let name: String
    /// The statements, run in one transaction with the `user_version` update.
    public let sql: String
}

/// The schema migrations this binary carries (embedded at build time from `Migrations/`).
public enum Migrations {
    /// The newest schema version this binary knows (a newer file is used when its levels allow: `SchemaContract`).
    public static var latestVersion: Int { embedded.last?.version ?? 0 }

    /// The release that carries schema `version`, from its migration's `schema_levels` row (5 on), for messages.
    static func release(of version: Int) -> String? {
        guard let sql = embedded.first(where: { $0.version == version })?.sql,
            let row = sql.firstRange(of: "VALUES (\(version), ")
        else { return nil }
        let fields = sql[row.upperBound...].prefix { $0 != ")" }.split(separator: "'")
        return fields.count >= 2 ? String(fields[1]) : nil
    }

    /// Brings the file up to `target` (default: the latest), one migration per `BEGIN IMMEDIATE` transaction
    /// that also sets `PRAGMA user_version`. The version is read again inside each transaction, so when two
    /// processes open a new file at once one migrates and the other finds the work done.
    /// `migrations` is for tests that play a newer release (the embedded ones plus one more).
    static func migrate(
        _ connection: Connection, to target: Int = latestVersion, using migrations: [Migration] = embedded
    ) throws(QueueError) {
        let current = try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version")
        // A file at or past the target (a newer release migrated it) is left as it is: never migrated back.
        guard current < target else { return }
        let steps = migrations.filter { $0.version <= target }
        func apply(_ migration: Migration) throws(QueueError) {
            let version = try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version")
            guard version < migration.version else { return }
            let before = try QueueSchema.actual(connection, normalizing: false)
            try connection.execute(
                migration.sql, operation: "applying migration \(migration.version)_\(migration.name)")
            if migration.version >= SchemaContract.firstContractVersion {
                try recordAdditions(connection, of: migration, before: before)
            }
            try connection.execute(
                "PRAGMA user_version = \(migration.version)", operation: "recording schema version")
        }
        if current == 0 {
            // A new file is created whole, in one transaction: never seen half-built, as an older release's file.
            try connection.write("creating the schema") { () throws(QueueError) in
                for migration in steps { try apply(migration) }
            }
            // A new file: move the schema out of the WAL at once, so that the file's size and its WAL's mean
            // what they say. Never waits: a busy file is checkpointed later by whoever closes it last.
            _ = try? connection.withBusyTimeout(milliseconds: 0) { () throws(QueueError) in
                try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)", operation: "checkpointing the new schema")
            }
        } else {
            for migration in steps {
                try connection.write("migrating to schema version \(migration.version)") {
                    () throws(QueueError) in try apply(migration)
                }
            }
        }
    }

    /// Records the tables and indexes `migration` created or changed in `schema_additions`, so that older binaries
    /// can tell them from planted objects. A trigger or a view is refused (no binary may tolerate code that runs
    /// inside its statements), and so is, from `firstRuledVersion` on, an object older binaries refuse
    /// (`SchemaContract.problem(with:...)`) without raising both levels: they would stop at it, not at the levels.
    private static func recordAdditions(
        _ connection: Connection, of migration: Migration, before: [String: QueueSchema.Object]
    ) throws(QueueError) {
        let objects = try QueueSchema.objects(
            connection, operation: "reading the schema migration \(migration.version) created", normalizing: false
        ).filter { object in
            // New, or an existing table whose CREATE statement changed: ALTER TABLE ... ADD COLUMN.
            guard object.sql != nil else { return false }
            guard let previous = before[object.name] else { return true }
            return object.type == "table" && previous.sql != object.sql
        }
        for object in objects {
            guard object.type == "table" || object.type == "index" else {
                throw QueueError.sqlite(
                    code: 1,
                    message: "migration \(migration.version)_\(migration.name) creates \(object.type) \(object.name); "
                        + "migrations may add tables and indexes only (docs/SCHEMA.md, \"Compatibility\")",
                    operation: "applying migration \(migration.version)_\(migration.name)")
            }
            try connection.run(
                "INSERT OR REPLACE INTO schema_additions (name, version, type, tbl_name, sql) VALUES (?1, ?2, ?3, ?4, ?5)",
                operation: "recording the schema migration \(migration.version) created", object.name,
                migration.version, object.type, object.tableName, object.sql)
        }
        if migration.version >= SchemaContract.firstRuledVersion {
            try requireRaisedLevels(connection, of: migration, adding: objects, before: before)
        }
    }

    /// Refuses `migration` when one of the `objects` it recorded is one that binaries older than it refuse, unless
    /// its `schema_levels` row raises both levels above the previous row's.
    private static func requireRaisedLevels(
        _ connection: Connection, of migration: Migration, adding objects: [QueueSchema.Object],
        before: [String: QueueSchema.Object]
    ) throws(QueueError) {
        var problems: [String] = []
        for object in objects {
            if let problem = try SchemaContract.problem(with: object, ours: before, connection: connection) {
                problems.append("\(object.type) \(object.name) \(problem)")
            }
        }
        guard !problems.isEmpty else { return }
        let rows = try connection.rows(
            "SELECT version, write_level, read_level FROM schema_levels WHERE version <= ?1 ORDER BY version DESC LIMIT 2",
            operation: "reading the schema levels", migration.version
        ) { (version: $0.int64(0), write: $0.int64(1), read: $0.int64(2)) }
        if rows.count == 2, rows[0].version == Int64(migration.version), rows[0].write > rows[1].write,
            rows[0].read > rows[1].read
        {
            return
        }
        throw QueueError.sqlite(
            code: 1,
            message: "migration \(migration.version)_\(migration.name) adds what older binaries refuse whatever the "
                + "levels say (\(problems.joined(separator: "; "))), so it must raise write_level and read_level in "
                + "its schema_levels row (docs/SCHEMA.md, \"Compatibility\")",
            operation: "applying migration \(migration.version)_\(migration.name)")
    }

    /// The embedded migrations a file at schema `version` has not had yet, oldest first (`queuectl migrate`).
    public static func pending(after version: Int) -> [Migration] {
        embedded.filter { $0.version > version }
    }
}
