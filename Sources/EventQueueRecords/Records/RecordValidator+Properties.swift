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

    /// A value inside `properties` or a nested custom attribute: strings at most 255 characters, object keys 1 to
    /// 255 characters not starting with `$`, anything else as JSON allows.
    ///
    /// Adds to `bound` an upper bound of the value's serialized size (every string byte counted as if it had to be
    /// escaped as `\u00XX`), so the caller only serializes to measure when the bound is over its limit. Errors
    /// carry the path below this value (`""`, `.key`, `[3].key`); the caller puts its own path in front.
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

    /// `checkNested` of a value at `path` (relative to the caller's own path, or absolute), with errors put under
    /// that path; the path is only built when there is an error.
    static func checkNested(
        _ value: JSONValue, bound: inout Int, under path: @autoclosure () -> String
    ) throws(ValidationError) {
        do throws(ValidationError) {
            try checkNested(value, bound: &bound)
        } catch {
            throw error.under(path())
        }
    }

    /// A name chosen by the writer: a property name, an attribute name, or a key of a nested object. All three
    /// follow one rule (1 to 255 characters, not starting with `$`, no control characters); only the words differ.
    /// `path` is put in front of `key` to name the field (`properties.`, `` for an attribute, `.` for a nested key,
    /// which the caller puts under its own path); an empty key is reported on `emptyKeyField`, since it has no
    /// name of its own. The path is only built when there is an error to report.
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
        if let control = controlCharacter(inKey: key) {
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
