/// Attributes objects: the user they name, standard profile fields and custom attributes.
extension RecordValidator {
    static func validateAttributes(_ object: JSONObject) throws(ValidationError) -> UserIdentity {
        let members = object.members
        var primary = -1
        var primaryCount = 0
        var email = -1
        var phone = -1
        for index in members.indices {
            switch Key(members[index].key) {
            case .externalID, .brazeID, .userAlias:
                if primary < 0 { primary = index }
                primaryCount += 1
            case .email: email = index
            case .phone: phone = index
            default: break
            }
        }
        if primaryCount > 1 {
            throw moreThanOneUser(members.lazy.map(\.key).filter { Key($0).namesUserAlone })
        }
        let identityIndex = primary >= 0 ? primary : email >= 0 ? email : phone
        guard identityIndex >= 0 else { throw noUser }
        let user = try identity(members[identityIndex])

        var attributeCount = 0
        for index in members.indices where index != identityIndex {
            let member = members[index]
            switch Key(member.key) {
            case .updateExistingOnly, .mergeObjects:
                try checkBoolean(member.value, field: member.key)
            default:
                attributeCount += 1
                try checkAttribute(key: member.key, value: member.value)
            }
        }
        guard attributeCount > 0 else {
            throw ValidationError(field: "record", rule: "must set at least one attribute")
        }
        return user
    }

    /// One attribute of an attributes object: a standard profile field or a custom attribute.
    static func checkAttribute(key: String, value: JSONValue) throws(ValidationError) {
        let known = Key(key)
        switch known {
        case .email, .phone, .firstName, .lastName, .homeCity:
            if case .null = value { return }
            guard case .string(let string) = value else {
                let expected = known == .email ? "an email address" : known == .phone ? "a phone number" : "a string"
                throw ValidationError(field: key, rule: "must be \(expected) or null (got \(value.typeName))")
            }
            switch known {
            case .email: try checkEmail(string, field: key)
            case .phone: try checkPhone(string, field: key)
            default: try checkLength(string, field: key, allowEmpty: true)
            }
        case .gender:
            try checkEnumeration(key, value, allowed: ["M", "F", "O", "N", "P"])
        case .emailSubscribe, .pushSubscribe:
            try checkEnumeration(key, value, allowed: ["opted_in", "subscribed", "unsubscribed"])
        case .dob:
            try checkFormatted(
                key, value, rule: "must be a date of birth in the form YYYY-MM-DD, or null",
                isValid: ISO8601.isValidDate)
        case .country:
            try checkFormatted(
                key, value, rule: "must be an ISO 3166-1 alpha-2 country code in uppercase, such as US, or null"
            ) { $0.utf8.count == 2 && ISOCodes.countries.contains($0) }
        case .language:
            try checkFormatted(
                key, value, rule: "must be an ISO 639-1 language code in lowercase, such as en, or null"
            ) { $0.utf8.count == 2 && ISOCodes.languages.contains($0) }
        case .timeZone:
            try checkFormatted(
                key, value, rule: "must be an IANA time zone name such as America/New_York or UTC, or null",
                isValid: isTimeZoneName)
        default:
            try checkCustomAttribute(key: key, value: value)
        }
    }

    /// A string in a checked format (or null, unsetting a profile field, when `nullable`); `rule` describes it.
    static func checkFormatted(
        _ field: String, _ value: JSONValue, rule: @autoclosure () -> String, nullable: Bool = true,
        isValid: (String) -> Bool
    ) throws(ValidationError) {
        if nullable, case .null = value { return }
        guard case .string(let text) = value else {
            throw ValidationError(field: field, rule: "\(rule()) (got \(value.typeName))")
        }
        guard isValid(text) else { throw ValidationError(field: field, rule: "\(rule()) (got \(quoted(text)))") }
    }

    /// A string from a fixed set, or null.
    static func checkEnumeration(_ field: String, _ value: JSONValue, allowed: [String]) throws(ValidationError) {
        try checkFormatted(
            field, value, rule: "must be one of \(allowed.joined(separator: ", ")) or null", isValid: allowed.contains)
    }

    /// "UTC", or `/`-separated segments of `[A-Za-z0-9_+-]`, the first starting with an uppercase letter.
    static func isTimeZoneName(_ zone: String) -> Bool {
        let bytes = zone.utf8
        guard !bytes.isEmpty, bytes.count <= maxTimeZoneLength else { return false }
        var segmentLength = 0
        var first = true
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "/"):
                guard segmentLength > 0 else { return false }
                segmentLength = 0
                first = false
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                segmentLength += 1
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"),
                UInt8(ascii: "+"), UInt8(ascii: "-"):
                guard !(first && segmentLength == 0) else { return false }
                segmentLength += 1
            default:
                return false
            }
        }
        return segmentLength > 0
    }

    /// A custom attribute: a string, number, boolean, null, array of strings, operation or nested object.
    static func checkCustomAttribute(key: String, value: JSONValue) throws(ValidationError) {
        try checkName(key, path: "", emptyKeyField: "record", noun: "attribute name")
        switch value {
        case .null, .bool, .number:
            return
        case .string(let string):
            try checkLength(string, field: key, allowEmpty: true)
        case .array(let items):
            try checkStringArray(items, at: key)
        case .object(let object):
            if let operation = object.members.first(where: { Key($0.key).isOperation }) {
                try checkOperation(operation, in: object, attribute: key)
            } else {
                var bound = 0
                try checkNested(value, bound: &bound, under: key)
                try checkSize(object, bound: bound, limit: maxNestedAttributeBytes, field: key)
            }
        }
    }

    /// `{"inc": number}`, `{"add": [strings]}` or `{"remove": [strings]}`, alone in its object.
    static func checkOperation(
        _ operation: JSONObject.Member, in object: JSONObject, attribute: String
    ) throws(ValidationError) {
        let name = operation.key
        guard object.count == 1 else {
            let others = object.keys.filter { $0 != name }
            throw ValidationError(
                field: attribute,
                rule: "mixes the \(name) operation with other keys (\(list(others))); "
                    + "an operation object has exactly one key: inc, add or remove")
        }
        if Key(name) == .inc {
            guard case .number = operation.value else {
                throw ValidationError(
                    field: attribute + ".inc", rule: "must be a number (got \(operation.value.typeName))")
            }
            return
        }
        guard case .array(let items) = operation.value else {
            throw ValidationError(
                field: attribute + "." + name, rule: "must be an array of strings (got \(operation.value.typeName))")
        }
        try checkStringArray(items, at: attribute + "." + name)
    }

    /// A custom attribute array, or the array of an `add` or `remove` operation, at `path` (built only for an
    /// error).
    static func checkStringArray(_ items: [JSONValue], at path: @autoclosure () -> String) throws(ValidationError) {
        guard items.count <= maxArrayItems else {
            throw ValidationError(field: path(), rule: "must have at most \(maxArrayItems) items (got \(items.count))")
        }
        for index in items.indices {
            guard case .string(let string) = items[index] else {
                throw ValidationError(
                    field: "\(path())[\(index)]",
                    rule: "must be a string (got \(items[index].typeName)): attribute arrays hold only strings")
            }
            if string.utf8.count > maxStringLength {
                try checkLength(string, field: "\(path())[\(index)]", allowEmpty: true)
            }
        }
    }
}
