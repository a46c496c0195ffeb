// Shared by the unit tests (Tests/EventQueueRecordsTests) and the libFuzzer target (Fuzz/, built by scripts/fuzz),
// which compiles this file with the target against the EventQueueRecords module, without Swift Testing: keep it
// free of `import Testing`, and of anything less visible than `package` in EventQueueRecords.
import EventQueueRecords

/// What one NDJSON line does at `queuectl enqueue --ndjson`: skipped, accepted (and stored as `payload`), or
/// rejected with a typed error.
enum NDJSONLineOutcome: Equatable, Sendable, CustomStringConvertible {
    /// Empty or only spaces and tabs: queuectl skips it.
    case blank
    /// What would be inserted: the serialized Braze object, its kind, the user it names, the idempotency key.
    case accepted(kind: RecordKind, payload: String, user: UserIdentity, idempotencyKey: String?)
    /// Refused: `field` is the `ValidationError` field (or `idempotency_key`), `message` the text a writer sees.
    case rejected(field: String, message: String)

    var description: String {
        switch self {
        case .blank: return "blank"
        case .accepted(let kind, let payload, let user, let key):
            return "accepted \(kind) of \(user.orderingKey) key \(key ?? "-"): \(payload)"
        case .rejected(let field, let message): return "rejected [\(field)]: \(message)"
        }
    }

    /// The payload, when accepted.
    var payload: String? {
        if case .accepted(_, let payload, _, _) = self { return payload }
        return nil
    }

    /// The rejected field, when rejected.
    var rejectedField: String? {
        if case .rejected(let field, _) = self { return field }
        return nil
    }

    /// The rejection message, when rejected.
    var message: String? {
        if case .rejected(_, let message) = self { return message }
        return nil
    }
}

/// A broken invariant: a bug, whatever the input was.
struct HostileInputViolation: Error, CustomStringConvertible {
    var description: String
}

/// Runs bytes through the same steps as `queuectl enqueue --ndjson` (split into lines, UTF-8 check,
/// `Record(jsonLine:)`, `RecordEncoder.encode`: validation, defaults, serialization) and checks what must hold for
/// any input, hostile or not:
///
/// - the byte and `String` entry points of the parser agree (value or error), and invalid UTF-8 never parses;
/// - any JSON value that parses serializes deterministically, and the serialization parses back to an equal value
///   that serializes to the same bytes (a fixed point);
/// - a rejection is a typed `ValidationError` or `RecordEncodingError` with a non-empty field and rule, and a description
///   free of control characters (it is printed to terminals and logs);
/// - an accepted record's payload is at most 256 KiB, parses back to the stored object, still validates, and names
///   the same user as the SQL derivation of `user_key` in Migrations/0001_init.sql.
enum HostileInputOracle {
    /// The enqueue time used for records without `time`, fixed so outcomes are reproducible.
    static let now: Int64 = 1_700_000_000_000

    /// Checks every line of an NDJSON document, split as queuectl splits it (`NDJSONLine`).
    static func check(document bytes: some Collection<UInt8>) throws(HostileInputViolation) -> [NDJSONLineOutcome] {
        var outcomes: [NDJSONLineOutcome] = []
        for line in NDJSONLine.lines(of: bytes) {
            outcomes.append(try check(line))
        }
        return outcomes
    }

    /// Checks one line's bytes (without its `\n`).
    static func check(line: some BidirectionalCollection<UInt8>) throws(HostileInputViolation) -> NDJSONLineOutcome {
        try check(NDJSONLine(bytes: line))
    }

    /// Checks one line, as `NDJSONLine` cut it.
    static func check(_ line: NDJSONLine) throws(HostileInputViolation) -> NDJSONLineOutcome {
        let text: String
        switch line {
        case .blank:
            return .blank
        case .invalidUTF8(let content):
            let byteParse = Result { () throws(JSONParseError) -> JSONValue in try JSONValue.parse(utf8: content) }
            if case .success(let value) = byteParse {
                throw HostileInputViolation(
                    description: "invalid UTF-8 parsed as \(value.serialized) from \(hexDump(content))")
            }
            // What queuectl reports for such a line (NDJSONInput), before any JSON parsing.
            return .rejected(field: "record", message: NDJSONLine.invalidUTF8Message)
        case .text(let lineText):
            text = lineText
        }
        let content = Array(text.utf8)
        let byteParse = Result { () throws(JSONParseError) -> JSONValue in try JSONValue.parse(utf8: content) }
        let stringParse = Result { () throws(JSONParseError) -> JSONValue in try JSONValue.parse(text) }
        switch (byteParse, stringParse) {
        case (.success(let fromBytes), .success(let fromString)):
            guard fromBytes.serialized == fromString.serialized else {
                throw HostileInputViolation(description: "byte and String parsers disagree on \(hexDump(content))")
            }
            try checkRoundTrip(fromBytes, input: content)
        case (.failure(let fromBytes), .failure(let fromString)):
            guard fromBytes == fromString else {
                throw HostileInputViolation(
                    description: "byte and String parsers fail differently: \(fromBytes) vs \(fromString)")
            }
            try checkParseError(fromBytes, inputCount: content.count)
        default:
            throw HostileInputViolation(
                description: "byte and String parsers disagree on success for \(hexDump(content))")
        }

        let record: Record
        do {
            record = try Record(jsonLine: text)
        } catch {
            try checkRejection(error)
            return .rejected(field: error.field, message: error.description)
        }
        guard case .success(let parsed) = stringParse else {
            throw HostileInputViolation(description: "Record(jsonLine:) accepted invalid JSON \(hexDump(content))")
        }
        _ = parsed

        let encoded: EncodedRecord
        do {
            encoded = try RecordEncoder.encode(record, now: now)
        } catch {
            switch error {
            case .invalidRecord(let validation):
                try checkRejection(validation)
                return .rejected(field: validation.field, message: validation.description)
            case .invalidIdempotencyKey:
                try checkPrintable(error.description)
                return .rejected(field: "idempotency_key", message: error.description)
            }
        }
        let named: UserIdentity
        do {
            named = try RecordValidator.validate(kind: record.kind, object: record.object)
        } catch {
            throw HostileInputViolation(description: "encoded a record that fails validation (\(error))")
        }
        return try checkAccepted(encoded, naming: named)
    }

    // MARK: Invariants

    /// Serialization is deterministic and a fixed point: parse(serialize(v)) == v, serializing that again gives
    /// the same bytes.
    static func checkRoundTrip(_ value: JSONValue, input: [UInt8]) throws(HostileInputViolation) {
        let first = value.serialized
        guard first == value.serialized else {
            throw HostileInputViolation(description: "serialization is not deterministic for \(hexDump(input))")
        }
        var bytes: [UInt8] = []
        value.serialize(into: &bytes)
        guard bytes.elementsEqual(first.utf8) else {
            throw HostileInputViolation(description: "serialize(into:) differs from serialized for \(hexDump(input))")
        }
        let reparsed: JSONValue
        do {
            reparsed = try JSONValue.parse(utf8: bytes)
        } catch {
            throw HostileInputViolation(description: "serialization \(first) does not parse: \(error)")
        }
        guard reparsed == value, reparsed.serialized == first else {
            throw HostileInputViolation(description: "round trip changed \(first) into \(reparsed.serialized)")
        }
    }

    /// A parse error points inside the input (or at its end) and says what is wrong.
    static func checkParseError(_ error: JSONParseError, inputCount: Int) throws(HostileInputViolation) {
        guard (0...inputCount).contains(error.offset), !error.message.isEmpty else {
            throw HostileInputViolation(description: "parse error outside the input of \(inputCount) bytes: \(error)")
        }
    }

    static func checkRejection(_ error: ValidationError) throws(HostileInputViolation) {
        guard !error.field.isEmpty, !error.rule.isEmpty else {
            throw HostileInputViolation(description: "rejection without a field or a rule: \(error.description)")
        }
        try checkPrintable(error.description)
    }

    /// Messages go to terminals and logs: no control character may reach them from the input.
    static func checkPrintable(_ message: String) throws(HostileInputViolation) {
        if let bad = message.unicodeScalars.first(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw HostileInputViolation(
                description: "message contains control character U+\(String(bad.value, radix: 16)): \(message)")
        }
    }

    /// `named` is the user the record named before encoding.
    static func checkAccepted(
        _ encoded: EncodedRecord, naming named: UserIdentity
    ) throws(HostileInputViolation) -> NDJSONLineOutcome {
        guard encoded.payload.count <= RecordEncoder.maximumPayloadBytes else {
            throw HostileInputViolation(description: "accepted a payload of \(encoded.payload.count) bytes")
        }
        let text = String(decoding: encoded.payload, as: UTF8.self)
        let stored: JSONObject
        switch Result(catching: { () throws(JSONParseError) -> JSONValue in try JSONValue.parse(utf8: encoded.payload) }
        ) {
        case .success(let value):
            guard let object = value.objectValue else {
                throw HostileInputViolation(description: "payload is not an object: \(text)")
            }
            stored = object
        case .failure(let error):
            throw HostileInputViolation(description: "payload does not parse (\(error)): \(text)")
        }
        guard stored.serialized == text else {
            throw HostileInputViolation(description: "payload is not canonical: \(text)")
        }
        let user: UserIdentity
        do {
            user = try RecordValidator.validate(kind: encoded.kind, object: stored)
        } catch {
            throw HostileInputViolation(description: "stored payload fails validation (\(error)): \(text)")
        }
        guard user == named else {
            throw HostileInputViolation(
                description: "stored payload names \(user.orderingKey), the record named \(named.orderingKey)")
        }
        let sqlKey = sqlUserKey(stored)
        guard sqlKey == named.orderingKey else {
            throw HostileInputViolation(
                description: "user_key in SQL would be \(sqlKey ?? "NULL"), the record names "
                    + "\(named.orderingKey): \(text)")
        }
        return .accepted(kind: encoded.kind, payload: text, user: named, idempotencyKey: encoded.idempotencyKey)
    }

    /// The `user_key` generated column of Migrations/0001_init.sql, evaluated on a stored object.
    static func sqlUserKey(_ object: JSONObject) -> String? {
        if case .string(let id)? = object["external_id"] { return "external_id:" + id }
        if case .string(let id)? = object["braze_id"] { return "braze_id:" + id }
        if case .object(let alias)? = object["user_alias"] {
            guard case .string(let label)? = alias["alias_label"], case .string(let name)? = alias["alias_name"] else {
                return nil
            }
            return "user_alias:" + label + ":" + name
        }
        if case .string(let email)? = object["email"] { return "email:" + email }
        if case .string(let phone)? = object["phone"] { return "phone:" + phone }
        return nil
    }

    /// At most 64 bytes of `bytes` in hex, for violation messages.
    static func hexDump(_ bytes: [UInt8]) -> String {
        let shown = bytes.prefix(64).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        return "\(bytes.count) bytes [" + shown.joined(separator: " ") + (bytes.count > 64 ? " …]" : "]")
    }
}

extension NDJSONLine {
    /// The lines of a whole document held in memory, blank ones included (line `n` is at index `n - 1`), cut at
    /// `NDJSONLine.newline` as queuectl cuts its input. A document that ends with `\n` has an empty last line,
    /// which is blank.
    static func lines(of document: some Collection<UInt8>) -> [NDJSONLine] {
        Array(document).split(separator: newline, omittingEmptySubsequences: false).map { NDJSONLine(bytes: $0) }
    }
}
