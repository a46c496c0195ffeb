extension SchemaContract {
    /// The schema version from which a migration's recorded additions must meet the rule of `problem(with:...)`
    /// unless it raises both levels, and from which binaries apply it (the first release that does carries
    /// migrations 7 and 8 as its own; older releases tolerate recorded additions by name and SQL).
    static let firstRuledVersion = 9

    /// The recorded additions present in a newer file that this binary must not tolerate, by name, each with the
    /// sentence to report. Being recorded (any group member can write `schema_additions`) only tells an object from
    /// a planted one; whether it is harmless is asked of the object itself.
    static func intolerableAdditions(
        _ connection: Connection, actual: [String: QueueSchema.Object], expected: [String: QueueSchema.Object],
        additions: [String: Addition]
    ) throws(QueueError) -> [String: String] {
        var found: [String: String] = [:]
        for (name, present) in actual where present != expected[name] {
            found[name] = try intolerance(of: present, additions: additions, ours: expected, connection: connection)
        }
        return found
    }

    /// The sentence `intolerableAdditions` reports for `present`, or `nil` when it is tolerable or not recorded at
    /// all (the comparisons report that as not created by EventQueue).
    static func intolerance(
        of present: QueueSchema.Object, additions: [String: Addition], ours: [String: QueueSchema.Object],
        connection: Connection
    ) throws(QueueError) -> String? {
        guard Addition.tolerates(present, in: additions),
            let version = additions[present.name]?.version ?? additions[present.tableName]?.version,
            version >= firstRuledVersion, let problem = try problem(with: present, ours: ours, connection: connection)
        else { return nil }
        let release = try release(connection, of: version).map { "EventQueue " + shown($0) }
        return "\(present.type) \(shown(present.name)) on \(shown(present.tableName)), recorded by schema version "
            + "\(version) (\(release ?? "no release recorded")), \(problem)"
    }

    /// Why `present`, an object a newer migration recorded, could change what this binary's statements do, or
    /// `nil` when it cannot, asked of SQLite's catalog, never of the SQL text. `ours`: this binary's own objects.
    ///
    /// Tolerated: an ordinary table none of ours that references none of ours, and any index on it; on a table of
    /// ours, an index that is not UNIQUE, not partial, with stored columns of built-in collation as keys. Anything
    /// else is refused, any change to an object of ours included.
    static func problem(
        with present: QueueSchema.Object, ours: [String: QueueSchema.Object], connection: Connection
    ) throws(QueueError) -> String? {
        let ourTables = Set(ours.values.filter { $0.type == "table" }.map { $0.name.lowercased() })
        if let wanted = ours[present.name] {
            return "replaces EventQueue's \(wanted.type) of that name: a migration that changes one of EventQueue's "
                + "tables or indexes raises both levels (a new column lives in a side table)"
        }
        switch present.type {
        case "table":
            return try newTableProblem(present.name, ourTables: ourTables, connection: connection)
        case "index":
            guard ourTables.contains(present.tableName.lowercased()) else { return nil }
            if present.name.hasPrefix("sqlite_autoindex_") {
                return "is a UNIQUE or PRIMARY KEY constraint added to a table of EventQueue's"
            }
            return try indexProblem(present.name, table: present.tableName, connection: connection)
        default:
            return "is a \(present.type), which runs code inside the statements on its table"
        }
    }

    /// SQLite's own collations: an index with another one fails every write of its table with "no such collation
    /// sequence" (EventQueue registers none).
    private static let builtInCollations: Set<String> = ["BINARY", "NOCASE", "RTRIM"]

    /// An index on a table of ours, asked of SQLite's pragmas (what it parsed, not what the text seems to say).
    private static func indexProblem(_ name: String, table: String, connection: Connection) throws(QueueError)
        -> String?
    {
        let operation = "reading a recorded index"
        guard
            let (unique, partial) = try connection.firstRow(
                #"SELECT "unique", partial FROM pragma_index_list(?1) WHERE name = ?2"#, operation: operation, table,
                name, row: { ($0.int64(0) != 0, $0.int64(1) != 0) })
        else { return "cannot be read" }
        if unique { return "is UNIQUE, so it can refuse a write that EventQueue's schema accepts" }
        if partial { return "is partial: SQLite evaluates its WHERE clause on every write of \(shown(table))" }
        let keys = try connection.rows(
            """
            SELECT x.cid, x.coll, c.name, coalesce(c.hidden, 0) FROM pragma_index_xinfo(?1) AS x
                LEFT JOIN pragma_table_xinfo(?2) AS c ON c.cid = x.cid
            WHERE x.key = 1
            """, operation: operation, name, table
        ) { (cid: $0.int64(0), collation: $0.text(1), column: $0.text(2) ?? "?", hidden: $0.int64(3)) }
        for key in keys {
            if key.cid == -2 {
                return "indexes an expression, which SQLite evaluates on every write of \(shown(table))"
            }
            if let collation = key.collation, !builtInCollations.contains(collation.uppercased()) {
                return "uses the collation \(shown(collation)), which is not one of SQLite's own"
            }
            // table_xinfo's hidden: 2 a VIRTUAL generated column, computed for the index on every write.
            if key.hidden == 2 {
                return "indexes the generated column \(shown(key.column)), computed on every write of \(shown(table))"
            }
        }
        return nil
    }

    /// A table none of ours: an ordinary one (a virtual table runs its module's code) that references none of ours
    /// (a build of SQLite may default foreign keys on, which would check or cascade our deletes against it).
    private static func newTableProblem(_ name: String, ourTables: Set<String>, connection: Connection)
        throws(QueueError) -> String?
    {
        let operation = "reading a recorded table"
        let type = try connection.scalarText("SELECT type FROM pragma_table_list(?1)", operation: operation, name)
        guard type == "table" else { return "is a \(type ?? "missing") table, not an ordinary one" }
        let references = try connection.rows(
            #"SELECT "table" FROM pragma_foreign_key_list(?1)"#, operation: operation, name
        ) { $0.text(0) ?? "" }
        guard let table = references.first(where: { ourTables.contains($0.lowercased()) }) else { return nil }
        return "references EventQueue's table \(shown(table)) with a foreign key"
    }

    /// The release that carries schema `version`, from its `schema_levels` row.
    static func release(_ connection: Connection, of version: Int) throws(QueueError) -> String? {
        try connection.scalarText(
            "SELECT release FROM schema_levels WHERE version = ?1", operation: "reading the schema levels", version)
    }

    private static func shown(_ text: String) -> String { QueueSchema.shown(text) }
}
