import EventQueue

/// The JSON shapes of queue statistics and drain summaries, shared by `queuectl` (`status --json`,
/// `drain --json`) and the daemon's control socket (`GET /status`, `POST /launch?wait=true`), so scripts parse
/// both the same way and the two can never drift apart.
public enum ReportJSON {
    /// `pending`, `leased`, `dead`, `oldest_pending_age_seconds`, `db_bytes`, `wal_bytes`, `schema_version`,
    /// `next_retry_at` (ISO 8601 or null) and `path`.
    public static func stats(_ stats: QueueStats, path: String) -> JSONObject {
        [
            "pending": number(stats.pending),
            "leased": number(stats.leased),
            "dead": number(stats.dead),
            "oldest_pending_age_seconds": stats.oldestPendingAgeSeconds.flatMap { JSONNumber($0) }.map(
                JSONValue.number) ?? .null,
            "db_bytes": number(stats.databaseBytes),
            "wal_bytes": number(stats.walBytes),
            "schema_version": number(stats.schemaVersion),
            "next_retry_at": time(stats.nextRetryAtMilliseconds),
            "path": .string(path),
        ]
    }

    /// `delivered`, `retried`, `dead`, `batches`, `in_flight` (records handed to the sink, not settled yet), `result`, `halt`, then `pending`, `leased`, `dead_total` when
    /// known and `lock_holder` when another drainer held the lock.
    public static func summary(_ summary: DrainSummary) -> JSONObject {
        var object: JSONObject = [
            "delivered": number(summary.delivered),
            "retried": number(summary.retried),
            "dead": number(summary.dead),
            "batches": number(summary.batches),
            "in_flight": number(summary.inFlight),
            "result": .string(summary.result.rawValue),
            "halt": summary.halt.map { .string($0.description) } ?? .null,
        ]
        if let remaining = summary.remaining {
            object["pending"] = number(remaining.pending)
            object["leased"] = number(remaining.leased)
            object["dead_total"] = number(remaining.dead)
        }
        if let holder = summary.lockHolder { object["lock_holder"] = .string(holder.owner) }
        return object
    }

    public static func number(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }
    public static func number(_ value: Int64) -> JSONValue { .number(JSONNumber(value)) }

    /// A Unix-millisecond time as ISO 8601, or null.
    public static func time(_ milliseconds: Int64?) -> JSONValue {
        milliseconds.map { .string(ISO8601.format(unixMilliseconds: $0)) } ?? .null
    }
}
