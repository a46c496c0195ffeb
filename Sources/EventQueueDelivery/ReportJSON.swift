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
            "remembered_keys": number(stats.rememberedKeys),
            "remembered_key_bytes": number(stats.rememberedKeyBytes),
            "next_retry_at": time(stats.nextRetryAtMilliseconds),
            "path": .string(path),
        ]
    }

    /// A pass's summary: `DrainReport.json`, the one shape of the local and the remote `drain --json`.
    public static func summary(_ summary: DrainSummary) -> JSONObject {
        DrainReport(summary).json
    }

    public static func number(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }
    public static func number(_ value: Int64) -> JSONValue { .number(JSONNumber(value)) }

    /// A Unix-millisecond time as ISO 8601, or null.
    public static func time(_ milliseconds: Int64?) -> JSONValue {
        milliseconds.map { .string(ISO8601.format(unixMilliseconds: $0)) } ?? .null
    }
}
