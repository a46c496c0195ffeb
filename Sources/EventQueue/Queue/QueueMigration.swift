/// `queuectl migrate`: moving an existing queue file to this release's schema on an admin's word.
///
/// Writers never migrate an existing file and the daemon migrates at start; an admin who upgrades in another
/// order, or wants to see a migration's effect first, runs this.
public enum QueueMigration {
    /// What a migration did, or would do.
    public struct Plan: Sendable, Hashable {
        /// The queue file.
        public var path: String
        /// The file's schema version before.
        public var fromVersion: Int
        /// The migrations applied (or to apply), oldest first: empty when the file is at or past this release's.
        public var steps: [Migration]
        /// The schema version after (the file's own when it is newer than this release's: never migrated back).
        public var toVersion: Int { steps.last?.version ?? fromVersion }
        /// Whether the file crosses from before the compatibility contract: 1.0.0 (schema 4) refuses it after.
        public var leavesContractlessReleasesBehind: Bool {
            fromVersion < SchemaContract.firstContractVersion && toVersion >= SchemaContract.firstContractVersion
        }
    }

    /// The migrations `run` would apply, without changing the file (which must be one this release may consume).
    public static func plan(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) -> Plan {
        let connection = try Connection(path: path, busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        defer { connection.close() }
        let version = Int(try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version"))
        try SchemaContract.admit(connection, fileVersion: version, role: .consumer)
        if version > 0 { try QueueSchema.verify(connection, version: Migrations.latestVersion) }
        return Plan(path: path, fromVersion: version, steps: Migrations.pending(after: version))
    }

    /// Applies the pending migrations, each in its own transaction as at the daemon's start; returns what it did.
    public static func run(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) -> Plan {
        let planned = try plan(path: path, options: options)
        let file = try QueueFile(path: path, options: options, role: .consumer)
        file.close()
        return planned
    }
}

extension Migration {
    /// The migration's first comment line after "version N:", e.g. "the drain lock.", or its name.
    public var summary: String {
        guard let first = sql.split(separator: "\n").first, first.hasPrefix("--"),
            let colon = first.firstIndex(of: ":")
        else { return String(name.map { $0 == "_" ? " " : $0 }) }
        return String(first[first.index(after: colon)...].drop { $0 == " " })
    }
}
