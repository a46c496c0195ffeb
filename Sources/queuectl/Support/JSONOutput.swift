import EventQueue
import EventQueueDelivery

/// The `--json` shapes of queuectl's output, built with the queue's own JSON model.
enum JSONOutput {
    static func number(_ value: Int) -> JSONValue { ReportJSON.number(value) }
    static func number(_ value: Int64) -> JSONValue { ReportJSON.number(value) }
    static func time(_ milliseconds: Int64?) -> JSONValue { ReportJSON.time(milliseconds) }

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
        if let erasure = record.erasure {
            // A user's erasure: what is sent is POST /users/delete for the identifier in "object".
            object["type"] = "erasure"
            object["identifier_type"] = .string(erasure.type.rawValue)
        }
        object["object"] = (try? JSONValue.parse(record.payload)) ?? .string(record.payload)
        return .object(object)
    }
}
