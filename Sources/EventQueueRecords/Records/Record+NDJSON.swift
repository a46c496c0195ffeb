extension Record {
    /// Parses one NDJSON line: a Braze object plus `"type": "event" | "attribute" | "purchase"` (or an identity call,
    /// `"identify" | "alias" | "merge"`, `Record.identify`) and an optional
    /// `"idempotency_key"`. Both are removed from the object; the rest is the object as it will be sent.
    /// Parsing is not validation: `QueueWriter.enqueue` checks the Braze rules.
    public init(jsonLine: String) throws(ValidationError) {
        if jsonLine.utf8.count > RecordEncoder.maximumPayloadBytes {
            throw ValidationError(
                field: "record",
                rule: "must be at most \(RecordEncoder.maximumPayloadBytes) bytes (got \(jsonLine.utf8.count))")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(jsonLine)
        } catch {
            throw ValidationError(field: "record", rule: "is not valid JSON: \(error)")
        }
        guard var object = value.objectValue else {
            throw ValidationError(field: "record", rule: "must be a JSON object (got \(value.typeName))")
        }
        guard let typeValue = object["type"] else {
            throw ValidationError(field: "type", rule: "is required: one of \(Self.types)")
        }
        guard let typeName = typeValue.stringValue, let kind = RecordKind(rawValue: typeName) else {
            throw ValidationError(field: "type", rule: "must be one of \(Self.types)")
        }
        object["type"] = nil
        var key: String?
        if let keyValue = object["idempotency_key"] {
            guard let text = keyValue.stringValue else {
                throw ValidationError(field: "idempotency_key", rule: "must be a string")
            }
            key = text
            object["idempotency_key"] = nil
        }
        self.init(kind: kind, object: object, idempotencyKey: key)
    }

    static let types = RecordKind.allCases.map(\.rawValue).joined(separator: ", ")
}
