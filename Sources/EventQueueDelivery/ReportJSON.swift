import EventQueue

/// The JSON shapes of queue statistics and drain summaries, shared by `queuectl` and the daemon's control socket
/// so the two never drift apart.
public enum ReportJSON {
    /// The statistics of `queuectl status --json` and `GET /status` (times as ISO 8601 or null; `max_queue_bytes`
    /// and `max_age_seconds` 0 for none; `dropped`: every record given up since the file was created).
    public static func stats(_ stats: QueueStats, path: String, line: WriteLineReport) -> JSONObject {
        var object: JSONObject = [
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
            "erasures_pending": number(stats.erasuresPending),
            "erasures_dead": number(stats.erasuresDead),
            "erasures_unauthorized": number(stats.erasuresUnauthorized),
            "scrub_owed_since": time(stats.scrubOwedSinceMilliseconds),
            "held_users": .object([
                "count": number(stats.heldUsers), "keys": .array(stats.heldUserKeys.map(JSONValue.string)),
            ]),
            "next_retry_at": time(stats.nextRetryAtMilliseconds),
            "path": .string(path),
            "writers_line": writeLine(line),
        ]
        for member in limits(stats) { object[member.key] = member.value }
        return object
    }

    /// The limits of `stats`: `queue_bytes`, `limits` and `dropped`.
    public static func limits(_ stats: QueueStats) -> JSONObject {
        let limits = stats.limits ?? QueueLimits()
        return [
            "queue_bytes": number(stats.queueBytes),
            "limits": [
                "max_queue_bytes": number(limits.maxQueueBytes),
                "when_full": .string(limits.whenFull.rawValue),
                "max_age_seconds": number(limits.maxAgeSeconds),
                "set_at": time(stats.limitsSetAtMilliseconds),
            ],
            "dropped": [
                "oldest": number(stats.drops.oldest),
                "refused": number(stats.drops.refused),
                "expired": number(stats.drops.expired),
            ],
        ]
    }

    /// The writers' line: `state` ("in_use", "absent" or "off"), its counters, `held_seconds` null when nobody
    /// has the turn.
    public static func writeLine(_ line: WriteLineReport) -> JSONValue {
        var object: JSONObject = [:]
        switch line.state {
        case .absent: object["state"] = "absent"
        case .off(let reason):
            object["state"] = "off"
            object["reason"] = .string(reason)
        case .inUse(let busy):
            object["state"] = "in_use"
            object["busy"] = .bool(busy)
        }
        object["waiting"] = number(line.waiting)
        object["held_seconds"] =
            line.heldNanoseconds.flatMap { JSONNumber(Double($0) / 1e9) }.map(JSONValue.number) ?? .null
        for (key, value) in [
            ("handoffs", line.handoffs), ("passed_over", line.passedOver), ("repairs", line.repairs),
            ("bypasses", line.bypasses),
        ] {
            object[key] = .number(JSONNumber(text: String(value)) ?? JSONNumber(0))
        }
        return .object(object)
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
