import EventQueue
import EventQueueDelivery

/// The `--json` shapes of queuectl's output, built with the queue's own JSON model.
enum JSONOutput {
    static func number(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }
    static func number(_ value: Int64) -> JSONValue { .number(JSONNumber(value)) }
    static func optional(_ value: Int64?) -> JSONValue { value.map(number) ?? .null }
    static func time(_ milliseconds: Int64?) -> JSONValue {
        milliseconds.map { .string(ISO8601.format(unixMilliseconds: $0)) } ?? .null
    }

    static func stats(_ stats: QueueStats, path: String) -> JSONValue {
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

    static func record(_ record: QueuedRecord) -> JSONValue {
        var object: JSONObject = [
            "id": number(record.id),
            "type": .string(record.kind.rawValue),
            "state": .string(record.state.rawValue),
            "attempts": number(record.attempts),
            "created_at": time(record.createdAtMilliseconds),
            "next_attempt_at": time(record.nextAttemptAtMilliseconds > 0 ? record.nextAttemptAtMilliseconds : nil),
            "last_error": record.lastError.map(JSONValue.string) ?? .null,
        ]
        if record.state == .dead { object["dead_at"] = time(record.deadAtMilliseconds) }
        object["object"] = (try? JSONValue.parse(record.payload)) ?? .string(record.payload)
        return .object(object)
    }

    static func summary(_ summary: DrainSummary) -> JSONValue {
        var object: JSONObject = [
            "delivered": number(summary.delivered),
            "retried": number(summary.retried),
            "dead": number(summary.dead),
            "batches": number(summary.batches),
            "result": .string(summary.result.rawValue),
            "halt": summary.halt.map { .string($0.description) } ?? .null,
        ]
        if let remaining = summary.remaining {
            object["pending"] = number(remaining.pending)
            object["leased"] = number(remaining.leased)
            object["dead_total"] = number(remaining.dead)
        }
        return .object(object)
    }
}
