extension QueueAdmin {
    /// Makes dead letters pending again with a fresh attempt budget, but only those whose payload now passes
    /// Braze's rules; one still invalid stays dead with its current reason (a retry would only dead-letter it
    /// again). `nil` means all.
    public func retryDeadChecked(ids: [Int64]?) throws(QueueError) -> DeadRetryReport {
        let connection = file.connection
        return try connection.write("retrying dead letters") { () throws(QueueError) in
            let checked = try connection.rows(
                """
                SELECT id, kind, payload, created_at_ms, erasure FROM records
                WHERE state = 'dead' AND (?1 IS NULL OR id IN (SELECT value FROM json_each(?1))) ORDER BY id
                """, operation: "retrying dead letters", ids.map(RecordStateSQL.jsonArray)
            ) { select -> (id: Int64, reason: String?) in
                let kind = select.text(1).flatMap(RecordKind.init(rawValue:)) ?? .event
                guard let payload = select.validatedText(2) else {
                    return (select.int64(0), "payload is not valid UTF-8")
                }
                return (
                    select.int64(0),
                    select.isNull(4)
                        ? Self.problem(payload: payload, kind: kind, createdAt: select.int64(3))
                        : Self.erasureProblem(payload: payload, column: select.validatedText(4))
                )
            }
            let valid = checked.filter { $0.reason == nil }.map(\.id)
            let invalid = checked.compactMap { row in row.reason.map { (id: row.id, reason: $0) } }
            for id in valid {
                try connection.run(RecordStateSQL.retryDead, operation: "retrying dead letters", id)
            }
            for item in invalid {
                try connection.run(
                    RecordStateSQL.keepDead, operation: "retrying dead letters", item.id,
                    "still invalid at retry: " + item.reason)
            }
            return DeadRetryReport(retried: valid, stillInvalid: invalid)
        }
    }

    /// Why an erasure would be dead-lettered again at delivery, or `nil`; never checked as a Braze record.
    static func erasureProblem(payload: String, column: String?) -> String? {
        guard let erasure = column.flatMap(Erasure.init(json:)) else { return Erasure.unreadableColumnReason }
        if case .failure(let problem) = erasure.user(payload: payload) { return "erasure not sendable: \(problem)" }
        return nil
    }

    /// Why a payload would be dead-lettered again at delivery, or `nil` when it would be sent.
    static func problem(payload: String, kind: RecordKind, createdAt: Int64) -> String? {
        if case .failure(let problem) = StoredPayload.check(payload, kind: kind, createdAtMilliseconds: createdAt) {
            return problem.description
        }
        return nil
    }
}
