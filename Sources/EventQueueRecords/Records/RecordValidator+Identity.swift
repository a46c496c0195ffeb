/// The user a record names: which member names it, and the checks of identifiers, email addresses and phone
/// numbers.
extension RecordValidator {
    static let noUser = ValidationError(
        field: "record", rule: "must name a user with one of external_id, braze_id, user_alias, email or phone")

    /// The user of an event or purchase: exactly one identifier must be present.
    static func soleUser(of object: JSONObject) throws(ValidationError) -> UserIdentity {
        let members = object.members
        var found = -1
        for index in members.indices where Key(members[index].key).isIdentifier {
            guard found < 0 else { throw moreThanOneUser(members.lazy.map(\.key).filter { Key($0).isIdentifier }) }
            found = index
        }
        guard found >= 0 else { throw noUser }
        return try identity(members[found])
    }

    static func moreThanOneUser<Keys: Sequence<String>>(_ keys: Keys) -> ValidationError {
        ValidationError(field: "record", rule: "names more than one user (\(list(Array(keys)))); give exactly one")
    }

    /// Checks the identifier of a user to erase (`forget`) as `enqueue` checks a record's, so that a deletion the
    /// queue keeps is one Braze can take.
    package static func checkUser(_ user: UserIdentity) throws(ValidationError) {
        _ = try identity(user.brazeMember)
    }

    /// Checks the member that names the user and returns that user.
    static func identity(_ member: JSONObject.Member) throws(ValidationError) -> UserIdentity {
        let key = member.key
        let identifier = Key(key)
        if identifier == .userAlias { return try alias(member.value) }
        guard case .string(let value) = member.value else {
            if case .null = member.value, identifier == .email || identifier == .phone {
                throw ValidationError(
                    field: key, rule: "must be a string (got null): it names the user, so it cannot be unset")
            }
            throw ValidationError(field: key, rule: "must be a string (got \(member.value.typeName))")
        }
        switch identifier {
        case .email:
            try checkEmail(value, field: key)
            return .email(value)
        case .phone:
            try checkPhone(value, field: key)
            return .phone(value)
        case .brazeID:
            try checkIdentifier(value, field: key)
            return .brazeID(value)
        default:
            try checkIdentifier(value, field: key)
            return .externalID(value)
        }
    }

    static func alias(_ value: JSONValue) throws(ValidationError) -> UserIdentity {
        guard case .object(let object) = value else {
            throw ValidationError(
                field: "user_alias", rule: "must be an object with alias_name and alias_label (got \(value.typeName))")
        }
        var name: String?
        var label: String?
        for member in object.members {
            let isName: Bool
            switch Key(member.key) {
            case .aliasName: isName = true
            case .aliasLabel: isName = false
            default:
                throw ValidationError(
                    field: member.key.isEmpty ? "user_alias" : "user_alias." + member.key,
                    rule: member.key.isEmpty
                        ? "must not have an empty key; a user alias has exactly alias_name and alias_label"
                        : "is not a field of a user alias; a user alias has exactly alias_name and alias_label")
            }
            let field = isName ? "user_alias.alias_name" : "user_alias.alias_label"
            guard case .string(let string) = member.value else {
                throw ValidationError(field: field, rule: "must be a string (got \(member.value.typeName))")
            }
            try checkIdentifier(string, field: field)
            if isName { name = string } else { label = string }
        }
        guard let name else { throw ValidationError(field: "user_alias.alias_name", rule: "is required") }
        guard let label else { throw ValidationError(field: "user_alias.alias_label", rule: "is required") }
        return .alias(name: name, label: label)
    }

    /// An identifier string: 1 to 255 characters, no control characters.
    static func checkIdentifier(_ value: String, field: String) throws(ValidationError) {
        try checkLength(value, field: field, allowEmpty: false)
        if let control = controlCharacter(in: value) {
            throw ValidationError(field: field, rule: "must not contain control characters (found \(control))")
        }
    }

    /// At most 255 characters, exactly one `@`, a non-empty local part, a domain with a dot not at either end,
    /// no whitespace or control characters.
    static func checkEmail(_ email: String, field: String) throws(ValidationError) {
        try checkLength(email, field: field, allowEmpty: false)
        var atCount = 0
        var localLength = 0
        var domainLength = 0
        var domainDots = 0
        var domainFirst: UInt8 = 0
        var domainLast: UInt8 = 0
        var nonASCII = false
        let whitespace = ValidationError(
            field: field, rule: "must be an email address without whitespace or control characters")
        for byte in email.utf8 {
            if byte <= 0x20 || byte == 0x7F { throw whitespace }
            if byte >= 0x80 { nonASCII = true }
            if byte == UInt8(ascii: "@") {
                atCount += 1
            } else if atCount == 0 {
                localLength += 1
            } else if atCount == 1 {
                if domainLength == 0 { domainFirst = byte }
                domainLength += 1
                domainLast = byte
                if byte == UInt8(ascii: ".") { domainDots += 1 }
            }
        }
        if nonASCII, email.unicodeScalars.contains(where: { $0.properties.isWhitespace || isControl($0) }) {
            throw whitespace
        }
        guard atCount == 1 else {
            throw ValidationError(field: field, rule: "must be an email address with exactly one @ (found \(atCount))")
        }
        guard localLength > 0 else {
            throw ValidationError(field: field, rule: "must be an email address with a non-empty part before the @")
        }
        guard domainDots > 0, domainFirst != UInt8(ascii: "."), domainLast != UInt8(ascii: ".") else {
            throw ValidationError(
                field: field, rule: "must be an email address whose domain (after the @) has a dot, not at either end")
        }
    }

    /// An optional leading `+`, then digits and the separators space `-` `.` `(` `)`, with 3 to 20 digits.
    static func checkPhone(_ phone: String, field: String) throws(ValidationError) {
        try checkLength(phone, field: field, allowEmpty: false)
        var digits = 0
        var position = 0
        for scalar in phone.unicodeScalars {
            position += 1
            switch scalar {
            case "0"..."9": digits += 1
            case " ", "-", ".", "(", ")": break
            case "+" where position == 1: break
            default:
                throw ValidationError(
                    field: field,
                    rule: "must be a phone number: an optional leading +, then digits and the separators "
                        + "space - . ( ) (found \(describe(scalar)) at character \(position))")
            }
        }
        guard phoneDigits.contains(digits) else {
            throw ValidationError(
                field: field,
                rule: "must be a phone number with \(phoneDigits.lowerBound) to \(phoneDigits.upperBound) digits "
                    + "(got \(digits))")
        }
    }
}
