/// The one rule for a payload read back from the queue file: parse it, require an object, give an event or a
/// purchase without `time` its enqueue time (`RecordEncoder.fillInTime`), and validate it as the writer would.
///
/// One home, because the consumer, `dead retry` and salvage must agree on what is sendable (or a revived dead
/// letter goes dead again at once). A foreign writer (any SQLite client) may have stored anything.
package enum StoredPayload {
    /// Why a stored payload is not sendable.
    package enum Problem: Error, Sendable, CustomStringConvertible {
        case notJSON(String)
        case notAnObject
        case invalid(ValidationError)

        /// The problem as a validation error of the field `payload` (what the drain loop dead-letters with).
        package var validationError: ValidationError {
            switch self {
            case .notJSON(let reason): return ValidationError(field: "payload", rule: "is not valid JSON: \(reason)")
            case .notAnObject: return ValidationError(field: "payload", rule: "must be a JSON object")
            case .invalid(let error): return error
            }
        }

        /// The problem in words (what `dead retry` records when a dead letter is still invalid).
        package var description: String {
            if case .invalid(let error) = self { return error.description }
            return "payload " + validationError.rule
        }
    }

    /// The object that would be sent for `payload` (with `time` filled in) and whether `payload` itself spells it
    /// (nothing was filled in: the parser is strict, so such a payload reads as the same object in any parser and is
    /// sent as it is), or why none would be.
    package static func check(
        _ payload: String, kind: RecordKind, createdAtMilliseconds: Int64
    ) -> Result<(object: JSONObject, payloadIsObject: Bool), Problem> {
        let value: JSONValue
        do {
            value = try JSONValue.parse(payload)
        } catch {
            return .failure(.notJSON("\(error)"))
        }
        guard var object = value.objectValue else { return .failure(.notAnObject) }
        let members = object.count
        RecordEncoder.fillInTime(&object, kind: kind, enqueuedAtMilliseconds: createdAtMilliseconds)
        do {
            _ = try RecordValidator.validate(kind: kind, object: object)
        } catch {
            return .failure(.invalid(error))
        }
        return .success((object, object.count == members))
    }
}
