#if canImport(Glibc)
    import Glibc
#endif

/// The findings of `queuectl check`: facts about the file, and the problems that make it unhealthy.
public struct CheckReport: Sendable, Hashable {
    /// One line of the report: what was looked at, and what it is.
    public struct Fact: Sendable, Hashable {
        /// What was looked at ("schema version", "pending").
        public var name: String
        /// What it is.
        public var value: String
    }

    /// The file checked.
    public var path: String
    /// What was found, in the order `queuectl check` prints it.
    public var facts: [Fact] = []
    /// Anything here makes `queuectl check` exit non-zero.
    public var problems: [String] = []
    /// Worth knowing, not wrong (an older schema the daemon will migrate, a newer additive one, odd permissions).
    public var warnings: [String] = []

    /// True when nothing in `problems`: `queuectl check` exits 0.
    public var isHealthy: Bool { problems.isEmpty }
}

/// Inspects a queue file without changing it: opened read-only, never created, never migrated.
public enum QueueCheck {
    /// Checks the file at `path`; never throws: what cannot be read is a problem in the report.
    public static func run(path: String, busyTimeoutMilliseconds: Int = 5_000) -> CheckReport {
        var report = CheckReport(path: path)
        do {
            // Before anything opens it: a FIFO would block the header read, a device is not a queue.
            _ = try QueuePath.inspect(path, allowingLinks: true)
            _ = try QueuePath.inspect(path)
        } catch QueueError.unsafeQueueFile(_, let reason) where reason.contains("hard links") {
            report.problems.append("\(path) has more than one name: \(reason)")
        } catch {
            report.problems.append(error.description)
            return report
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            report.problems.append("\(path): \(String(cString: strerror(errno)))")
            return report
        }
        let mode = Int(info.st_mode & 0o777)
        report.facts.append(.init(name: "file_mode", value: "0" + String(mode, radix: 8)))
        report.facts.append(.init(name: "db_bytes", value: String(info.st_size)))
        if mode & 0o060 != 0o060 {
            report.warnings.append("file mode is 0\(String(mode, radix: 8)); writers in the queue's group need 0660")
        }
        if !QueuePath.mayBeSQLite(path) {
            report.problems.append("\(path) is not an SQLite database (bad or missing header)")
            return report
        }
        let connection: Connection
        do {
            connection = try Connection(
                path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds,
                readOnly: !leavesNoFilesBehindReadWrite(path))
        } catch {
            report.problems.append(problem(for: error))
            return report
        }
        defer { connection.close() }
        do {
            try inspect(connection, into: &report)
        } catch {
            report.problems.append(problem(for: error))
        }
        return report
    }

    /// Whether to inspect through a read-write connection (that writes nothing): a read-only one creates a missing
    /// `-wal` and `-shm` and leaves them behind, owned by whoever ran the check, where the next writer of another
    /// group could not open them; a last read-write close removes them. Only with no `-wal` (nothing to
    /// checkpoint) and when this user may write the file.
    private static func leavesNoFilesBehindReadWrite(_ path: String) -> Bool {
        access(path + "-wal", F_OK) != 0 && access(path + "-shm", F_OK) != 0 && access(path, R_OK | W_OK) == 0
    }

    /// An error as a problem line of the check itself (the generic message would say to run the check).
    private static func problem(for error: QueueError) -> String {
        if case .corrupt(let path, let detail) = error {
            return "queue file \(path) is corrupt (\(detail)); restore it, or copy its readable records out with "
                + "`queuectl salvage \(path) NEW` (EventQueue never overwrites or deletes it)"
        }
        return error.description
    }

    private static func inspect(_ connection: Connection, into report: inout CheckReport) throws(QueueError) {
        let version = Int(try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version"))
        report.facts.append(.init(name: "schema_version", value: String(version)))
        var comparable = version >= 1
        if version > Migrations.latestVersion {
            comparable = try inspectNewer(connection, version: version, into: &report)
        } else if version >= 1 {
            try reportLevels(connection, into: &report)
        }
        if version == 0 {
            report.problems.append("the file has no EventQueue schema (user_version 0)")
        } else if version < Migrations.latestVersion {
            report.warnings.append(
                "schema version \(version) is older than \(Migrations.latestVersion); the daemon migrates it at "
                    + "start, or run `queuectl migrate`")
        }
        let journal = try connection.scalarText("PRAGMA journal_mode", operation: "reading journal_mode") ?? "?"
        report.facts.append(.init(name: "journal_mode", value: journal))
        if journal.lowercased() != "wal" { report.problems.append("journal_mode is \(journal), expected wal") }
        let autoVacuum = try connection.scalarInt("PRAGMA auto_vacuum", operation: "reading auto_vacuum")
        let vacuumNames = [0: "none", 1: "full", 2: "incremental"]
        report.facts.append(.init(name: "auto_vacuum", value: vacuumNames[Int(autoVacuum)] ?? String(autoVacuum)))
        if autoVacuum != 2 { report.problems.append("auto_vacuum is not incremental; deleted records never shrink") }
        for name in ["page_size", "page_count", "freelist_count"] {
            report.facts.append(
                .init(name: name, value: String(try connection.scalarInt("PRAGMA " + name, operation: name))))
        }
        if comparable {
            // The whole schema, as the daemon compares it (QueueSchema.verify): every difference named.
            let differences = try QueueSchema.compare(connection, version: Migrations.latestVersion).differences
            report.facts.append(.init(name: "schema", value: differences.isEmpty ? "ok" : "differs"))
            report.problems.append(contentsOf: differences.map { "schema: " + $0 })
            if version > Migrations.latestVersion, differences.isEmpty {
                report.warnings.append(
                    "schema version \(version) is newer than this binary's \(Migrations.latestVersion); its changes "
                        + "are additive, so EventQueue \(EventQueueVersion.string) writes and consumes it as it is")
            }
        }
        // Before anything reads the rows: a damaged page is named here, not met as SQLITE_CORRUPT by a scan below
        // (which of those reads the table rather than an index is the query planner's choice).
        let messages = try connection.rows("PRAGMA integrity_check(20)", operation: "checking integrity") {
            $0.text(0) ?? ""
        }
        report.facts.append(.init(name: "integrity", value: messages == ["ok"] ? "ok" : "failed"))
        guard messages == ["ok"] else {
            report.problems.append(contentsOf: messages.map { "integrity: " + $0 })
            return
        }
        if version >= 1 {
            let outOfRange = try connection.scalarInt(
                """
                SELECT count(*) FROM records WHERE id NOT BETWEEN 1 AND \(StoredRow.idRange.upperBound)
                    OR attempts NOT BETWEEN 0 AND \(StoredRow.attemptsRange.upperBound)
                    OR created_at_ms NOT BETWEEN 0 AND \(StoredRow.timeRange.upperBound)
                    OR next_attempt_at_ms NOT BETWEEN 0 AND \(StoredRow.timeRange.upperBound)
                """, operation: "checking stored ranges")
            if outOfRange > 0 {
                report.warnings.append(
                    "\(outOfRange) record(s) have an id, attempts or time out of range (written by a foreign writer "
                        + "with its checks off); the daemon dead-letters them with the reason")
            }
            let keys = try RememberedKeys.measure(connection)
            report.facts.append(.init(name: "remembered_keys", value: String(keys.count)))
            report.facts.append(.init(name: "remembered_key_bytes", value: String(keys.bytes)))
            let future = try RememberedKeys.futureDated(connection, now: WallClock.nowMilliseconds())
            if future > 0 {
                report.warnings.append(
                    "\(future) remembered idempotency key(s) are dated in the future (planted, or written by a clock "
                        + "far ahead) and would never expire; the daemon's next maintenance dates them now, so they "
                        + "expire after the 7-day retention (`queuectl keys prune --older-than 0s` forgets them now)")
            }
        }
    }

    /// The file's levels and the releases that may write and consume it (facts `write_level`, `read_level`,
    /// `writers`, `consumers`). A file older than the contract is shared with EventQueue 1.0.0 too.
    private static func reportLevels(_ connection: Connection, into report: inout CheckReport) throws(QueueError) {
        var facts = [
            ("write_level", "1"), ("read_level", "1"), ("writers", "EventQueue 1.0.0 and later"),
            ("consumers", "EventQueue 1.0.0 and later (the daemon migrates it at start)"),
        ]
        if let levels = try SchemaContract.levels(connection) {
            let writers = try SchemaContract.firstRelease(connection, role: .writer, level: levels.writeLevel)
            let consumers = try SchemaContract.firstRelease(connection, role: .consumer, level: levels.readLevel)
            facts = [
                ("write_level", String(levels.writeLevel)), ("read_level", String(levels.readLevel)),
                ("writers", "EventQueue \(writers ?? levels.release) and later"),
                ("consumers", "EventQueue \(consumers ?? levels.release) and later"),
            ]
        }
        report.facts += facts.map { CheckReport.Fact(name: $0.0, value: $0.1) }
    }

    /// A file a newer release migrated: usable when its levels allow, else a problem naming the side to upgrade.
    /// Returns whether to compare its schema.
    private static func inspectNewer(_ connection: Connection, version: Int, into report: inout CheckReport)
        throws(QueueError) -> Bool
    {
        guard try SchemaContract.levels(connection) != nil else {
            report.problems.append(
                "schema version \(version) is newer than this binary's \(Migrations.latestVersion); upgrade EventQueue")
            return false
        }
        try reportLevels(connection, into: &report)
        let problems = report.problems.count
        for role in [QueueRole.writer, .consumer] {
            do {
                try SchemaContract.admit(connection, fileVersion: version, role: role)
            } catch {
                report.problems.append(error.description)
            }
        }
        return report.problems.count == problems
    }
}
