/// `properties` of events and purchases, the values nested in them or in custom attributes, and the one rule for
/// the names a writer chooses (property names, attribute names, nested keys).
extension RecordValidator {
    /// `properties` of an event or purchase.
    static func checkProperties(_ value: JSONValue) throws(ValidationError) {
        guard case .object(let properties) = value else {
            throw ValidationError(field: "properties", rule: "must be an object (got \(value.typeName))")
        }
        guard properties.count <= maxPropertyCount else {
            throw ValidationError(
                field: "properties", rule: "must have at most \(maxPropertyCount) keys (got \(properties.count))")
        }
        var bound = 2
        for member in properties.members {
            let key = member.key
            try checkName(key, path: "properties.", emptyKeyField: "properties", noun: "property name")
            if isReservedProperty(key) {
                throw ValidationError(
                    field: "properties." + key, rule: "is reserved by Braze (time and event_name cannot be properties)")
            }
            bound &+= 6 &* key.utf8.count &+ 4
            try checkNested(member.value, bound: &bound, under: "properties." + key)
        }
        try checkSize(properties, bound: bound, limit: maxPropertiesBytes, field: "properties")
    }

    /// `time` and `event_name`, which Braze keeps for itself (lengths first: most keys then need no comparison).
    static func isReservedProperty(_ key: String) -> Bool {
        let length = key.utf8.count
        return (length == 4 && key == "time") || (length == 10 && key == "event_name")
    }

    /// A value inside `properties` or a nested custom attribute: strings at most 255 characters, object keys by
    /// `checkName`, anything else as JSON allows. Adds to `bound` an upper bound of its serialized size (every
    /// string byte as `\u00XX`), so the caller serializes to measure only above its limit. Errors carry the path
    /// below this value (`""`, `.key`, `[3].key`).
    static func checkNested(_ value: JSONValue, bound: inout Int) throws(ValidationError) {
        switch value {
        case .null, .bool:
            bound &+= 5
        case .number(let number):
            bound &+= 2 &* number.text.utf8.count &+ 8
        case .string(let string):
            try checkLength(string, field: "", allowEmpty: true)
            bound &+= 6 &* string.utf8.count &+ 2
        case .array(let items):
            bound &+= 2
            for index in items.indices {
                bound &+= 1
                try checkNested(items[index], bound: &bound, under: "[\(index)]")
            }
        case .object(let object):
            bound &+= 2
            for member in object.members {
                let key = member.key
                try checkName(key, path: ".", emptyKeyField: "", noun: "key")
                bound &+= 6 &* key.utf8.count &+ 4
                try checkNested(member.value, bound: &bound, under: "." + key)
            }
        }
    }

    /// `checkNested` of a value at `path`, with errors put under it; the path is only built for an error.
    static func checkNested(
        _ value: JSONValue, bound: inout Int, under path: @autoclosure () -> String
    ) throws(ValidationError) {
        do throws(ValidationError) {
            try checkNested(value, bound: &bound)
        } catch {
            throw error.under(path())
        }
    }

    /// A name chosen by the writer (property, attribute or nested key): 1 to 255 characters, not starting with `$`,
    /// no control characters. `path` goes in front of `key` to name the field; an empty key is reported on
    /// `emptyKeyField`.
    static func checkName(
        _ key: String, path: String, emptyKeyField: String, noun: String
    ) throws(ValidationError) {
        if key.isEmpty {
            throw ValidationError(
                field: emptyKeyField, rule: "must not have an empty key; \(noun)s are 1 to 255 characters")
        }
        if key.utf8.count > maxStringLength, case let count = scalarCount(key), count > maxStringLength {
            throw ValidationError(
                field: path + key, rule: "is not a valid \(noun): it must be 1 to 255 characters (got \(count))")
        }
        if key.utf8.first == UInt8(ascii: "$") {
            throw ValidationError(field: path + key, rule: "is not a valid \(noun): it must not start with $")
        }
        if let control = controlCharacter(in: key) {
            throw ValidationError(
                field: path + key,
                rule: "is not a valid \(noun): it must not contain control characters (found \(control))")
        }
    }
}

extension ValidationError {
    /// This error, with a relative field path (`""`, `.key`, `[3]`) put under `parent`.
    func under(_ parent: String) -> ValidationError {
        var error = self
        error.field = parent + field
        return error
    }
}
