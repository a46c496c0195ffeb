import CSQLite

/// One salvage pass: reads rows from the old file and inserts them into the new one.
struct SalvageCopier {
    let reader: Connection
    let writer: Connection
    let now: Int64
    let maxAttempts: Int64
    var tried: Set<Int64> = []
    /// Rows to insert with a new id once every row that keeps its id is in (and the id counter carried over).
    var deferred: [Row] = []

    /// A checked row: its old id, whether it is a dead letter, and the values after the id, in the order of
    /// `RecordStateSQL.salvageInsert` for the new file's columns.
    struct Row {
        var id: Int64
        var dead: Bool
        var values: [(any SQLValue)?]
    }

    /// The columns read; a file older than schema 6 has no per-user key, older than 7 no erasure (NULL in their
    /// place).
    let columns: String
    /// Whether the new file has `user_idempotency_key` (a build without migration 6 creates it at schema 5), and
    /// `records.erasure` (schema 7 and later, only with the per-user keys).
    let writerHasUserKeys: Bool
    let writerHasErasures: Bool

    private static func hasColumn(_ name: String, _ connection: Connection) -> Bool {
        (try? connection.scalarInt(
            "SELECT count(*) FROM pragma_table_info('records') WHERE name = '\(name)'",
            operation: "reading the schema")) == 1
    }

    enum Read {
        case row(Int64), end, damaged
    }

    init(reader: Connection, writer: Connection, now: Int64, maxAttempts: Int64) {
        self.reader = reader
        self.writer = writer
        self.now = now
        self.maxAttempts = maxAttempts
        columns =
            "id, kind, payload, created_at_ms, idempotency_key, state, attempts, next_attempt_at_ms, last_error, "
            + "dead_at_ms"
            + (Self.hasColumn("user_idempotency_key", reader)
                ? ", user_idempotency_key, record_digest" : ", NULL AS user_idempotency_key, NULL")
            + (Self.hasColumn("erasure", reader) ? ", erasure" : ", NULL AS erasure")
        writerHasUserKeys = Self.hasColumn("user_idempotency_key", writer)
        writerHasErasures = writerHasUserKeys && Self.hasColumn("erasure", writer)
    }

    mutating func copyRecords(into report: inout SalvageReport) throws(QueueError) {
        // Ids below 1 exist only when a foreign writer chose them: start there, so that no row is passed over.
        var next = min(1, (try? reader.scalarInt("SELECT min(id) FROM records", operation: "reading records")) ?? 1)
        scan: while true {
            switch try readRow(firstRowFrom, id: next, report: &report) {
            case .end:
                break scan
            case .row(let id):
                guard id < Int64.max else { break scan }
                next = id + 1
            case .damaged:
                let resume = try nextReadable(after: next)
                // Unreadable to the end: the range ends at the highest id ever assigned, when that is known.
                let end = resume.map { $0 - 1 } ?? max(next, highestAssignedID() ?? Int64.max)
                report.damagedRanges.append(next...end)
                guard let resume else { break scan }
                next = resume
            }
        }
        // Ids the live index still lists: retry each one not read yet (rows between two damaged regions), and
        // count the ones that stay unreadable.
        let (liveIDs, complete) = liveIndexIDs()
        report.indexComplete = complete
        for id in liveIDs where !tried.contains(id) {
            let exactly = "SELECT \(columns) FROM records WHERE id = ?1"
            if case .row(let found) = try readRow(exactly, id: id, report: &report), found == id { continue }
            report.unreadable += 1
            report.seen += 1
            if report.unreadableIDs.count < 1_000 { report.unreadableIDs.append(id) }
        }
    }

    private var firstRowFrom: String { "SELECT \(columns) FROM records WHERE id >= ?1 ORDER BY id LIMIT 1" }

    /// Reads the row `sql` finds for `id` and copies it; `.damaged` when SQLite cannot read it.
    private mutating func readRow(_ sql: String, id: Int64, report: inout SalvageReport) throws(QueueError) -> Read {
        let statement: Statement
        let found: Bool
        do {
            statement = try reader.statement(sql, operation: "reading records", id)
            found = try statement.step()
        } catch {
            return .damaged
        }
        defer { statement.reset() }
        guard found else { return .end }
        let rowID = statement.int64(0)
        // A damaged page can yield rows out of order; never step backwards.
        guard rowID >= id else { return .damaged }
        guard tried.insert(rowID).inserted else { return .row(rowID) }
        report.seen += 1
        try copy(statement, id: rowID, report: &report)
        return .row(rowID)
    }

    /// The smallest id after `start` from which a read succeeds (or finds the end), by doubling then bisecting.
    /// `nil` when nothing after `start` can be read.
    private func nextReadable(after start: Int64) throws(QueueError) -> Int64? {
        var bad = start
        var step: Int64 = 1
        var high: Int64
        while true {
            let (probe, overflow) = bad.addingReportingOverflow(step)
            if overflow { return nil }
            high = probe
            if try probeReadable(probe) { break }
            bad = probe
            step = step > Int64.max / 2 ? Int64.max : step * 2
        }
        while high - bad > 1 {
            let middle = bad + (high - bad) / 2
            if try probeReadable(middle) { high = middle } else { bad = middle }
        }
        return high
    }

    /// Whether the first row at or after `id` can be read in full (or there is none).
    private func probeReadable(_ id: Int64) throws(QueueError) -> Bool {
        do {
            return try reader.firstRow(firstRowFrom, operation: "reading records", id) { $0.int64(0) >= id } ?? true
        } catch {
            return false
        }
    }

    /// The old file's AUTOINCREMENT counter: the highest id it ever assigned.
    func highestAssignedID() -> Int64? {
        try? reader.scalarInt(
            "SELECT seq FROM sqlite_sequence WHERE name = 'records'", operation: "reading the id sequence")
    }

    /// The ids `records_live` lists (a covering index: reading it touches no table page).
    private func liveIndexIDs() -> ([Int64], Bool) {
        var ids: [Int64] = []
        guard
            let statement = try? reader.statement(
                "SELECT id FROM records INDEXED BY records_live WHERE state != 'dead' ORDER BY id",
                operation: "reading the live index")
        else { return ([], false) }
        defer { statement.reset() }
        do {
            while try statement.step() { ids.append(statement.int64(0)) }
            return (ids, true)
        } catch {
            return (ids, false)
        }
    }

    /// Validates one row read from the old file and inserts it into the new one (or defers it for a new id).
    private mutating func copy(_ row: Statement, id: Int64, report: inout SalvageReport) throws(QueueError) {
        func invalid(_ reason: String) { Self.countInvalid("id \(id): \(reason)", in: &report) }
        guard let kindText = row.validatedText(1), let kind = RecordKind(rawValue: kindText) else {
            return invalid("kind is not event, attribute or purchase")
        }
        guard let payload = row.validatedText(2) else { return invalid("payload is NULL or not valid UTF-8") }
        guard let state = row.validatedText(5), ["pending", "leased", "dead"].contains(state) else {
            return invalid("state is not pending, leased or dead")
        }
        let createdAt = row.int64(3)
        guard StoredRow.timeRange.contains(createdAt) else {
            return invalid("created_at_ms \(createdAt) is out of range (1970 to 9999)")
        }
        var erasure: String?
        if !row.isNull(12) {
            // An erasure is checked as one (its payload is an identifier alone, which no record may be).
            guard let column = row.validatedText(12), let parsed = Erasure(json: column),
                case .success = parsed.user(payload: payload)
            else { return invalid("an erasure whose column or identifier cannot be read") }
            guard writerHasErasures else { return invalid("an erasure, which the new file cannot hold") }
            erasure = column
        } else if case .failure = StoredPayload.check(payload, kind: kind, createdAtMilliseconds: createdAt) {
            return invalid("payload is not a valid \(kind.rawValue) for Braze")
        }
        /// A key column's value: `.some(nil)` when NULL, `nil` when it holds no valid key.
        func validKey(_ column: Int32) -> String?? {
            if row.isNull(column) { return .some(nil) }
            guard let text = row.validatedText(column), IdempotencyKey.isValid(text) else { return nil }
            return .some(text)
        }
        guard let key = validKey(4), let userKey = validKey(10) else {
            return invalid("idempotency key is not 1 to 255 bytes of UTF-8")
        }
        let dead = state == "dead"
        // Values only scheduling depends on are brought into range rather than refused (the record is kept).
        var wasClamped = false
        func clamp(_ value: Int64, _ range: ClosedRange<Int64>) -> Int64 {
            let clamped = min(max(value, range.lowerBound), range.upperBound)
            if clamped != value { wasClamped = true }
            return clamped
        }
        let attempts = clamp(row.int64(6), 0...(dead ? StoredRow.attemptsRange.upperBound : maxAttempts - 1))
        let nextAttemptAt = clamp(row.int64(7), 0...ClockHorizon.latestPlausible(after: now))
        let deadAt = dead ? clamp(row.optionalInt64(9) ?? now, 0...max(0, now)) : nil
        if wasClamped { report.clamped += 1 }
        var values: [(any SQLValue)?] = [
            kind.rawValue, payload, createdAt, key, dead ? "dead" : "pending", attempts, nextAttemptAt,
            row.validatedText(8), deadAt,
        ]
        // The per-user key and the record's digest (schema 6), and the erasure column (schema 7: without it the row
        // would be an attribute record), carried as stored.
        if writerHasUserKeys { values += [userKey, row.optionalInt64(11)] }
        if writerHasErasures { values.append(erasure) }
        let checked = Row(id: id, dead: dead, values: values)
        guard StoredRow.idRange.contains(id) else {
            deferred.append(checked)
            return
        }
        switch try insert(checked, id: id) {
        case .inserted:
            if dead { report.recoveredDead += 1 } else { report.recoveredPending += 1 }
        case .idTaken:
            deferred.append(checked)
        case .refused:
            invalid("a duplicate idempotency key, or a value the schema refuses")
        }
    }

    private enum InsertResult {
        case inserted, idTaken, refused
    }

    /// Inserts `row` with `id`, or with a new id from the new file's counter when `nil`.
    private func insert(_ row: Row, id: Int64?) throws(QueueError) -> InsertResult {
        do {
            try writer.run(
                RecordStateSQL.salvageInsert(withUserKeys: writerHasUserKeys, withErasures: writerHasErasures),
                operation: "salvaging records", values: [id] + row.values)
            return .inserted
        } catch {
            guard case .sqlite(let code, _, _) = error, code & 0xFF == SQLITE_CONSTRAINT else { throw error }
            // SQLITE_CONSTRAINT_PRIMARYKEY: the id is taken (a damaged page repeating rows, or a renumbered row).
            return code == SQLiteExtendedCode.constraintPrimaryKey ? .idTaken : .refused
        }
    }

    /// Inserts the rows whose id was out of range or taken, each with a new id from the new file's counter.
    mutating func copyRenumbered(into report: inout SalvageReport) throws(QueueError) {
        for row in deferred {
            switch try insert(row, id: nil) {
            case .inserted:
                report.renumbered += 1
                if row.dead { report.recoveredDead += 1 } else { report.recoveredPending += 1 }
            case .idTaken, .refused:
                Self.countInvalid(
                    "id \(row.id): a duplicate idempotency key, or a value the schema refuses", in: &report)
            }
        }
        deferred.removeAll()
    }

    /// Counts a row that is not a valid record, keeping the first 100 reasons (`line`: its id and what was wrong).
    private static func countInvalid(_ line: String, in report: inout SalvageReport) {
        report.invalid += 1
        if report.invalidReasons.count < 100 { report.invalidReasons.append(line) }
    }
}
