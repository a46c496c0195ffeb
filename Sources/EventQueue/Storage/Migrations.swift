/// One numbered schema step from `Migrations/NNNN_name.sql`.
public struct Migration: Sendable, Hashable {
    public let version: Int
    public let name: String
    public let sql: String
}

/// The schema migrations this binary carries (embedded at build time from `Migrations/`).
public enum Migrations {
    /// The newest schema version this binary knows; a file with a higher `user_version` is refused.
    public static var latestVersion: Int { embedded.last?.version ?? 0 }

    /// Brings the file up to `target` (default: the latest), one migration per `BEGIN IMMEDIATE` transaction
    /// that also sets `PRAGMA user_version`. The version is read again inside each transaction, so when two
    /// processes open a new file at once one migrates and the other finds the work done.
    static func migrate(_ connection: Connection, to target: Int = latestVersion) throws(QueueError) {
        let current = try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version")
        if current > latestVersion {
            throw QueueError.schemaTooNew(path: connection.path, found: Int(current), supported: latestVersion)
        }
        guard current < target else { return }
        for migration in embedded where migration.version <= target {
            try connection.transaction(operation: "migrating to schema version \(migration.version)") {
                () throws(QueueError) in
                let version = try connection.scalarInt(
                    "PRAGMA user_version", operation: "reading the schema version")
                if version > latestVersion {
                    throw QueueError.schemaTooNew(path: connection.path, found: Int(version), supported: latestVersion)
                }
                guard version < migration.version else { return }
                try connection.execute(
                    migration.sql, operation: "applying migration \(migration.version)_\(migration.name)")
                try connection.execute(
                    "PRAGMA user_version = \(migration.version)", operation: "recording schema version")
            }
        }
        if current == 0 {
            // A new file: move the schema out of the WAL at once, so that the file's size and its WAL's mean
            // what they say ("4096 bytes (wal 53592 bytes)" for an empty queue did not). Never waits: a busy
            // file is checkpointed later by whoever closes it last.
            _ = try? connection.withBusyTimeout(milliseconds: 0) { () throws(QueueError) in
                try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)", operation: "checkpointing the new schema")
            }
        }
    }
}
