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
                // Why it would be dead-lettered again at delivery, or nil when it would be sent; an erasure is
                // never checked as a Braze record.
                let id = select.int64(0)
                guard let payload = select.validatedText(2) else { return (id, "payload is not valid UTF-8") }
                if select.isNull(4) {
                    let kind = select.text(1).flatMap(RecordKind.init(rawValue:)) ?? .event
                    let check = StoredPayload.check(payload, kind: kind, createdAtMilliseconds: select.int64(3))
                    guard case .failure(let problem) = check else { return (id, nil) }
                    return (id, problem.description)
                }
                guard let erasure = select.validatedText(4).flatMap(Erasure.init(json:)) else {
                    return (id, Erasure.unreadableColumnReason)
                }
                guard case .failure(let problem) = erasure.user(payload: payload) else { return (id, nil) }
                return (id, "erasure not sendable: \(problem)")
            }
            var report = DeadRetryReport()
            for (id, reason) in checked {
                if let reason {
                    try connection.run(
                        RecordStateSQL.keepDead, operation: "retrying dead letters", id,
                        "still invalid at retry: " + reason)
                    report.stillInvalid.append((id, reason))
                } else {
                    try connection.run(RecordStateSQL.retryDead, operation: "retrying dead letters", id)
                    report.retried.append(id)
                }
            }
            return report
        }
    }
}
