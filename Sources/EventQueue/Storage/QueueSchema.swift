/// The schema objects of a queue file compared with the ones EventQueue's migrations create.
///
/// Why: every writer in the group can plant a trigger that runs on every ack (or cancels it), a view, or an index
/// replaced by another of the same name. So consumers and `queuectl check` compare the whole schema with the one
/// the migrations build in memory (`verify`), and writers names and types (`verifyNames`: their open stays O(1)).
public enum QueueSchema {
    /// One row of `sqlite_schema`.
    public struct Object: Sendable, Hashable {
        /// `table`, `index`, `trigger` or `view`.
        public var type: String
        /// The object's name.
        public var name: String
        /// The table it belongs to.
        public var tableName: String
        /// The `CREATE` statement with comments removed and white space collapsed; `nil` for automatic indexes.
        public var sql: String?
    }

    /// The objects the embedded migrations create, up to and including `version`, by name.
    public static func expected(version: Int) throws(QueueError) -> [String: Object] {
        let operation = "building the expected schema"
        let database = try Connection(inMemoryFor: operation)
        defer { database.close() }
        for migration in Migrations.embedded where migration.version <= version {
            try database.execute(migration.sql, operation: "\(operation) (migration \(migration.version))")
        }
        return try actual(database, operation: operation)
    }

    /// The file's schema objects, by name; `normalizing` false keeps each `CREATE` statement as written.
    static func actual(
        _ connection: Connection, operation: String = "reading the schema", normalizing: Bool = true
    ) throws(QueueError) -> [String: Object] {
        let found = try objects(connection, operation: operation, normalizing: normalizing)
        return Dictionary(found.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
    }

    /// The rows of `sqlite_schema`, in its order.
    static func objects(_ connection: Connection, operation: String, normalizing: Bool) throws(QueueError) -> [Object] {
        try connection.rows("SELECT type, name, tbl_name, sql FROM sqlite_schema", operation: operation) {
            Object(
                type: $0.text(0) ?? "", name: $0.text(1) ?? "", tableName: $0.text(2) ?? "",
                sql: normalizing ? $0.text(3).map(normalized) : $0.text(3))
        }
    }

    /// Every difference between `actual` and `expected`, one sentence each, in name order. `sqlite_sequence`
    /// may be missing (a queue never written to) and `sqlite_stat*` (statistics `ANALYZE` leaves) may be present.
    ///
    /// `tolerated`: the objects newer migrations recorded, not differences when present exactly as recorded, unless
    /// `intolerable` names them with the sentence to report.
    static func differences(
        actual: [String: Object], expected: [String: Object],
        tolerated: [String: SchemaContract.Addition] = [:], intolerable: [String: String] = [:]
    ) -> [String] {
        var found: [String] = []
        for name in Set(actual.keys).union(expected.keys).sorted() {
            switch (actual[name], expected[name]) {
            case (nil, let wanted?):
                if name == "sqlite_sequence" { continue }
                found.append("\(wanted.type) \(shown(name)) is missing")
            case (let present?, let wanted):
                if present == wanted || (wanted == nil && name.hasPrefix("sqlite_stat")) { continue }
                if let reason = intolerable[name] {
                    found.append(reason)
                    continue
                }
                // A recorded addition, or a table a newer migration changed additively (a column added), exactly
                // as it recorded it.
                if SchemaContract.Addition.tolerates(present, in: tolerated) { continue }
                guard let wanted else {
                    found.append(
                        "\(shown(present.type)) \(shown(name)) on \(shown(present.tableName)) was not created by "
                            + "EventQueue" + (present.sql.map { ": " + shown($0) } ?? ""))
                    continue
                }
                if name == "sqlite_sequence", present.type == wanted.type { continue }
                found.append(
                    "\(wanted.type) \(shown(name)) differs from the one EventQueue creates: found "
                        + "\(shown(present.type)) \(present.sql.map(shown) ?? "(no SQL)")")
            case (nil, nil):
                continue
            }
        }
        return found
    }

    /// The full comparison with what a binary of schema `version` expects: the objects of the file's own version
    /// when it is older, of `version` plus the recorded additions it may tolerate when newer. Throws
    /// `.unsafeQueueFile` naming the first differences and the `check` command that lists them all.
    static func verify(_ connection: Connection, version: Int) throws(QueueError) {
        let (found, onlyRecorded) = try compare(connection, version: version)
        guard !found.isEmpty else { return }
        throw try onlyRecorded ? additionsRefusal(connection, found) : refusal(connection.path, found)
    }

    /// Every difference `verify` and `queuectl check` report for a binary of schema `version`, and whether all of
    /// them are recorded additions this binary does not tolerate.
    static func compare(_ connection: Connection, version: Int) throws(QueueError) -> (
        differences: [String], onlyRecorded: Bool
    ) {
        let fileVersion = Int(try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version"))
        let actual = try actual(connection)
        let expected = try expected(version: min(max(fileVersion, 1), version))
        guard fileVersion > version else { return (differences(actual: actual, expected: expected), false) }
        let tolerated = try SchemaContract.additions(connection, after: version)
        // The rule judges what changed after the last migration that predates it: a binary older than that (only
        // `UserKeyTests`' schema-5 binary) takes migration 6's changes to its tables as they were recorded.
        let baseline = SchemaContract.firstRuledVersion - 1
        let intolerable = try SchemaContract.intolerableAdditions(
            connection, actual: actual, expected: version < baseline ? try Self.expected(version: baseline) : expected,
            additions: tolerated)
        let found = differences(actual: actual, expected: expected, tolerated: tolerated, intolerable: intolerable)
        return (found, intolerable.count == found.count)
    }

    /// The writers' comparison: no trigger or view, and exactly the expected names with their types (listed at
    /// build time from the migrations' text, not built), in one statement over `sqlite_schema`. In a newer file a recorded
    /// object is accepted when this binary may tolerate its definition (`SchemaContract.intolerance`); one under
    /// one of this binary's own names sends it to the full comparison.
    static func verifyNames(_ connection: Connection, version: Int) throws(QueueError) {
        let fileVersion = Int(try connection.scalarInt("PRAGMA user_version", operation: "reading the schema version"))
        let known = min(max(fileVersion, 1), version)
        let expected = Migrations.objectNames[min(known, Migrations.latestVersion)] ?? [:]
        let tolerated = fileVersion > version ? try SchemaContract.additions(connection, after: version) : [:]
        if tolerated.keys.contains(where: { expected[$0] != nil }) {
            try verify(connection, version: version)
            return
        }
        // This binary's objects, which a newer file's recorded additions are judged against.
        var ours: [String: Object] = [:]
        for (name, type) in expected where !tolerated.isEmpty {
            ours[name] = Object(type: type, name: name, tableName: "", sql: nil)
        }
        let statement = try connection.statement(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema", operation: "reading the schema")
        defer { statement.reset() }
        var seen = 0
        var found: [String] = []
        var intolerable: [String] = []
        while try statement.step() {
            let type = statement.text(0) ?? ""
            let name = statement.text(1) ?? ""
            if name.hasPrefix("sqlite_") {
                if name.hasPrefix("sqlite_autoindex_") || name == "sqlite_sequence" || name.hasPrefix("sqlite_stat") {
                    if type == "table" || type == "index" { continue }
                }
            } else if expected[name] == type {
                seen += 1
                continue
            }
            if !tolerated.isEmpty {
                let present = Object(
                    type: type, name: name, tableName: statement.text(2) ?? "", sql: statement.text(3).map(normalized))
                if SchemaContract.Addition.tolerates(present, in: tolerated) {
                    let sentence = try SchemaContract.intolerance(
                        of: present, additions: tolerated, ours: ours, connection: connection)
                    if let sentence { intolerable.append(sentence) }
                    continue
                }
            }
            found.append("\(shown(type)) \(shown(name)) was not created by EventQueue")
        }
        if found.isEmpty, seen != expected.count {
            found.append("\(expected.count - seen) schema object(s) EventQueue creates are missing")
        }
        if found.isEmpty, intolerable.isEmpty { return }
        if found.isEmpty { throw try additionsRefusal(connection, intolerable) }
        throw refusal(connection.path, found + intolerable)
    }

    private static func listed(_ found: [String]) -> String {
        found.prefix(3).joined(separator: "; ") + (found.count > 3 ? "; and \(found.count - 3) more" : "")
    }

    private static func refusal(_ path: String, _ found: [String]) -> QueueError {
        let listed = listed(found)
        return .unsafeQueueFile(
            path: path,
            reason: "it has schema objects EventQueue did not create (\(listed)); someone with write access changed "
                + "its schema. Run `queuectl check --db \(path)` for every difference, then remove them or copy the "
                + "records out with `queuectl salvage \(path) NEW`")
    }

    /// The refusal of a newer file whose only differences are recorded additions this binary does not tolerate.
    private static func additionsRefusal(_ connection: Connection, _ found: [String]) throws(QueueError) -> QueueError {
        let path = connection.path
        let release = try SchemaContract.levels(connection)?.release
        return .unsafeQueueFile(
            path: path,
            reason: "it has schema objects that a newer release recorded but that EventQueue "
                + "\(EventQueueVersion.string) cannot use safely (\(listed(found))): in a newer file it tolerates only "
                + "what cannot change the outcome of its writes (new tables, plain indexes on columns, columns "
                + "added without constraints). Upgrade it to EventQueue \(release.map(shown) ?? "a newer release") or "
                + "later; if no release created them, someone with write access changed its schema: run `queuectl "
                + "check --db \(path)` for every difference, then remove them or copy the records out with `queuectl "
                + "salvage \(path) NEW`")
    }

    /// SQL with `--` and `/* */` comments removed and every run of white space made one space, so that a file
    /// created by an older build with other comments compares equal. Quoted text is kept as it is.
    static func normalized(_ sql: String) -> String {
        var result: [UInt8] = []
        let bytes = Array(sql.utf8)
        var index = 0
        var pendingSpace = false
        func emit(_ byte: UInt8) {
            if pendingSpace, !result.isEmpty { result.append(0x20) }
            pendingSpace = false
            result.append(byte)
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "-"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "-") {
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
                pendingSpace = true
                continue
            }
            if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "*") {
                index += 2
                while index + 1 < bytes.count,
                    !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/"))
                {
                    index += 1
                }
                index += 2
                pendingSpace = true
                continue
            }
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
                pendingSpace = true
                index += 1
                continue
            }
            // Quoted text and names are kept as they are (a `--` inside `[...]` is part of a name, not a comment).
            if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "`")
                || byte == UInt8(ascii: "[")
            {
                let quote = byte == UInt8(ascii: "[") ? UInt8(ascii: "]") : byte
                emit(byte)
                index += 1
                while index < bytes.count {
                    result.append(bytes[index])
                    index += 1
                    if bytes[index - 1] == quote { break }
                }
                continue
            }
            emit(byte)
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }

    static func shown(_ text: String) -> String {
        let printable = ValidationError.printable(text)
        return printable.count > 200 ? String(printable.prefix(200)) + "…" : printable
    }
}
