/// The enqueue-time check of a record against the rules of Braze's `POST /users/track`.
///
/// A record that passes is one Braze will take as it is, so the queue never holds a record that can only fail at
/// delivery, when no one is left to fix it. The check runs on every enqueue, so it walks the object's bytes and
/// members without regexes or Foundation, and allocates nothing of its own unless it has an error to report (or a
/// `properties` object or nested attribute large enough that it has to be serialized to be measured).
///
/// Lengths are counted in Unicode scalars (`String.unicodeScalars.count`), not in Swift `Character`s: an emoji
/// such as "👍" is one, "é" written as `e` plus a combining acute accent is two, and a family emoji joined with
/// zero-width joiners is five. "Characters" in the rules and in error messages means Unicode scalars.
///
/// Errors name the field as a dotted path into the Braze object (`properties.song`, `user_alias.alias_name`,
/// `favorite_colors[3]`), or `record` for the object as a whole, and phrase the rule to read after it:
/// `name` "must be 1 to 255 characters (got 0)". The first rule broken is reported, in this order: the user the
/// record names, then each member in the order written, then the required fields that are missing.
public enum RecordValidator {
    /// Checks a Braze object of the given kind; returns the one user it names. Throws the first rule broken.
    ///
    /// - Events and purchases name exactly one user with `external_id`, `braze_id`, `user_alias`, `email` or
    ///   `phone`.
    /// - In an attributes object `email` and `phone` are also profile fields: when `external_id`, `braze_id` or
    ///   `user_alias` is present it names the user and `email`/`phone` are values to set (or `null` to unset);
    ///   otherwise `email` names the user (and `phone` is a value to set), or else `phone` does.
    ///   An `email` or `phone` that names the user must be a string: `null` (unset) is only accepted when another
    ///   identifier names the user.
    public static func validate(kind: RecordKind, object: JSONObject) throws(ValidationError) -> UserIdentity {
        switch kind {
        case .event: return try validateEvent(object)
        case .purchase: return try validatePurchase(object)
        case .attribute: return try validateAttributes(object)
        }
    }

    // MARK: - Limits

    /// Longest string Braze takes for a name, an identifier or a value, in Unicode scalars.
    static let maxStringLength = 255
    /// Most keys in one `properties` object.
    static let maxPropertyCount = 256
    /// Largest serialized `properties` object, in bytes (Braze's older, stricter limit).
    static let maxPropertiesBytes = 50_000
    /// Largest serialized nested custom attribute, in bytes.
    static let maxNestedAttributeBytes = 100_000
    /// Most items in a custom attribute array or an `add`/`remove` operation.
    static let maxArrayItems = 500
    /// Most digits in a phone number (E.164 allows 15; the slack is for extensions and national prefixes).
    static let phoneDigits = 3...20
    /// Longest `time_zone`, in bytes (all ASCII).
    static let maxTimeZoneLength = 64

    // MARK: - Kinds

    /// A member name the rules know, recognized by its length and first byte and then one comparison: this runs
    /// on every key of every record, and comparing a key with a dozen names in turn would dominate the check.
    enum Key: Equatable {
        case externalID, brazeID, userAlias, email, phone, aliasName, aliasLabel
        case name, time, properties, appID, updateExistingOnly, mergeObjects
        case productID, currency, price, quantity
        case firstName, lastName, homeCity, gender, dob, country, language, timeZone, emailSubscribe, pushSubscribe
        case inc, add, remove
        case other

        init(_ key: String) {
            let utf8 = key.utf8
            guard let first = utf8.first else {
                self = .other
                return
            }
            let known: (Key, String)
            switch (utf8.count, first) {
            case (3, UInt8(ascii: "a")): known = (.add, "add")
            case (3, UInt8(ascii: "d")): known = (.dob, "dob")
            case (3, UInt8(ascii: "i")): known = (.inc, "inc")
            case (4, UInt8(ascii: "n")): known = (.name, "name")
            case (4, UInt8(ascii: "t")): known = (.time, "time")
            case (5, UInt8(ascii: "e")): known = (.email, "email")
            case (5, UInt8(ascii: "p")): known = key == "phone" ? (.phone, "phone") : (.price, "price")
            case (6, UInt8(ascii: "a")): known = (.appID, "app_id")
            case (6, UInt8(ascii: "g")): known = (.gender, "gender")
            case (6, UInt8(ascii: "r")): known = (.remove, "remove")
            case (7, UInt8(ascii: "c")): known = (.country, "country")
            case (8, UInt8(ascii: "b")): known = (.brazeID, "braze_id")
            case (8, UInt8(ascii: "c")): known = (.currency, "currency")
            case (8, UInt8(ascii: "l")): known = (.language, "language")
            case (8, UInt8(ascii: "q")): known = (.quantity, "quantity")
            case (9, UInt8(ascii: "h")): known = (.homeCity, "home_city")
            case (9, UInt8(ascii: "l")): known = (.lastName, "last_name")
            case (9, UInt8(ascii: "t")): known = (.timeZone, "time_zone")
            case (10, UInt8(ascii: "a")): known = (.aliasName, "alias_name")
            case (10, UInt8(ascii: "f")): known = (.firstName, "first_name")
            case (10, UInt8(ascii: "p")):
                known = utf8.last == UInt8(ascii: "s") ? (.properties, "properties") : (.productID, "product_id")
            case (10, UInt8(ascii: "u")): known = (.userAlias, "user_alias")
            case (11, UInt8(ascii: "a")): known = (.aliasLabel, "alias_label")
            case (11, UInt8(ascii: "e")): known = (.externalID, "external_id")
            case (14, UInt8(ascii: "_")): known = (.mergeObjects, "_merge_objects")
            case (14, UInt8(ascii: "p")): known = (.pushSubscribe, "push_subscribe")
            case (15, UInt8(ascii: "e")): known = (.emailSubscribe, "email_subscribe")
            case (21, UInt8(ascii: "_")): known = (.updateExistingOnly, "_update_existing_only")
            default:
                self = .other
                return
            }
            self = key == known.1 ? known.0 : .other
        }

        /// One of the five ways to name a user.
        var isIdentifier: Bool {
            switch self {
            case .externalID, .brazeID, .userAlias, .email, .phone: return true
            default: return false
            }
        }

        /// An identifier that names the user even in an attributes object, where email and phone may be values.
        var namesUserAlone: Bool {
            self == .externalID || self == .brazeID || self == .userAlias
        }

        /// `inc`, `add` or `remove`: the key of an operation object.
        var isOperation: Bool {
            self == .inc || self == .add || self == .remove
        }
    }

    static func validateEvent(_ object: JSONObject) throws(ValidationError) -> UserIdentity {
        let user = try soleUser(of: object)
        var hasName = false
        for member in object.members {
            switch Key(member.key) {
            case .externalID, .brazeID, .userAlias, .email, .phone:
                continue
            case .name:
                try checkString(member.value, field: "name", allowEmpty: false)
                hasName = true
            case .time:
                try checkTime(member.value)
            case .properties:
                try checkProperties(member.value)
            case .appID:
                try checkString(member.value, field: "app_id", allowEmpty: false)
            case .updateExistingOnly:
                try checkBoolean(member.value, field: member.key)
            default:
                throw notAField(member.key, of: "a Braze event object")
            }
        }
        guard hasName else { throw ValidationError(field: "name", rule: "is required") }
        return user
    }

    static func validatePurchase(_ object: JSONObject) throws(ValidationError) -> UserIdentity {
        let user = try soleUser(of: object)
        var hasProduct = false
        var hasCurrency = false
        var hasPrice = false
        for member in object.members {
            switch Key(member.key) {
            case .externalID, .brazeID, .userAlias, .email, .phone:
                continue
            case .productID:
                try checkString(member.value, field: "product_id", allowEmpty: false)
                hasProduct = true
            case .currency:
                try checkCurrency(member.value)
                hasCurrency = true
            case .price:
                guard case .number = member.value else {
                    throw ValidationError(field: "price", rule: "must be a number (got \(member.value.typeName))")
                }
                hasPrice = true
            case .quantity:
                try checkQuantity(member.value)
            case .time:
                try checkTime(member.value)
            case .properties:
                try checkProperties(member.value)
            case .appID:
                try checkString(member.value, field: "app_id", allowEmpty: false)
            case .updateExistingOnly:
                try checkBoolean(member.value, field: member.key)
            default:
                throw notAField(member.key, of: "a Braze purchase object")
            }
        }
        guard hasProduct else { throw ValidationError(field: "product_id", rule: "is required") }
        guard hasCurrency else { throw ValidationError(field: "currency", rule: "is required") }
        guard hasPrice else { throw ValidationError(field: "price", rule: "is required") }
        return user
    }

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

    // MARK: - The user

    static let noUser = ValidationError(
        field: "record", rule: "must name a user with one of external_id, braze_id, user_alias, email or phone")

    static func isIdentifier(_ key: String) -> Bool {
        Key(key).isIdentifier
    }

    /// The user of an event or purchase: exactly one identifier must be present.
    static func soleUser(of object: JSONObject) throws(ValidationError) -> UserIdentity {
        let members = object.members
        var found = -1
        for index in members.indices where isIdentifier(members[index].key) {
            guard found < 0 else { throw moreThanOneUser(members.lazy.map(\.key).filter(isIdentifier)) }
            found = index
        }
        guard found >= 0 else { throw noUser }
        return try identity(members[found])
    }

    static func moreThanOneUser<Keys: Sequence<String>>(_ keys: Keys) -> ValidationError {
        ValidationError(field: "record", rule: "names more than one user (\(list(Array(keys)))); give exactly one")
    }

    /// `a`, `a and b`, `a, b and c`.
    static func list(_ items: [String]) -> String {
        guard let last = items.last else { return "" }
        guard items.count > 1 else { return last }
        return items.dropLast().joined(separator: ", ") + " and " + last
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
        if hasControlCharacter(value), let control = firstControlCharacter(value) {
            throw ValidationError(field: field, rule: "must not contain control characters (found \(control))")
        }
    }

    // MARK: - Event and purchase fields

    static func checkTime(_ value: JSONValue) throws(ValidationError) {
        guard case .string(let text) = value else {
            throw ValidationError(field: "time", rule: "must be an ISO 8601 timestamp string (got \(value.typeName))")
        }
        guard ISO8601.parse(text) != nil else {
            throw ValidationError(
                field: "time", rule: "must be an ISO 8601 timestamp such as 2024-05-01T12:00:00Z (got \(quoted(text)))")
        }
    }

    static func checkCurrency(_ value: JSONValue) throws(ValidationError) {
        let rule = "must be an active ISO 4217 currency code in uppercase, such as USD"
        guard case .string(let code) = value else {
            throw ValidationError(field: "currency", rule: "\(rule) (got \(value.typeName))")
        }
        guard code.utf8.count == 3, ISOCodes.currencies.contains(code) else {
            throw ValidationError(field: "currency", rule: "\(rule) (got \(quoted(code)))")
        }
    }

    static func checkQuantity(_ value: JSONValue) throws(ValidationError) {
        let rule = "must be an integer from 1 to 100"
        guard case .number(let number) = value else {
            throw ValidationError(field: "quantity", rule: "\(rule) (got \(value.typeName))")
        }
        guard let quantity = number.integerValue, (1...100).contains(quantity) else {
            throw ValidationError(field: "quantity", rule: "\(rule) (got \(number.text))")
        }
    }

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
            if key.isEmpty {
                throw ValidationError(
                    field: "properties", rule: "must not have an empty key; property names are 1 to 255 characters")
            }
            if key.utf8.count > maxStringLength, case let count = scalarCount(key), count > maxStringLength {
                throw ValidationError(
                    field: "properties." + key,
                    rule: "is not a valid property name: it must be 1 to 255 characters (got \(count))")
            }
            if key.utf8.first == UInt8(ascii: "$") {
                throw ValidationError(
                    field: "properties." + key, rule: "is not a valid property name: it must not start with $")
            }
            if let control = controlCharacter(inKey: key) {
                throw ValidationError(
                    field: "properties." + key,
                    rule: "is not a valid property name: it must not contain control characters (found \(control))")
            }
            if isReservedProperty(key) {
                throw ValidationError(
                    field: "properties." + key, rule: "is reserved by Braze (time and event_name cannot be properties)")
            }
            bound &+= 6 &* key.utf8.count &+ 4
            do throws(ValidationError) {
                try checkNested(member.value, bound: &bound)
            } catch {
                throw error.under("properties." + key)
            }
        }
        try checkSize(properties, bound: bound, limit: maxPropertiesBytes, field: "properties")
    }

    /// Serializes `object` to measure it, but only when `bound` (from `checkNested`) says it might be too large.
    static func checkSize(_ object: JSONObject, bound: Int, limit: Int, field: String) throws(ValidationError) {
        guard bound > limit else { return }
        let size = JSONValue.object(object).serialized.utf8.count
        guard size <= limit else {
            throw ValidationError(field: field, rule: "must serialize to at most \(limit) bytes (got \(size))")
        }
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
                do throws(ValidationError) {
                    try checkNested(items[index], bound: &bound)
                } catch {
                    throw error.under("[\(index)]")
                }
            }
        case .object(let object):
            bound &+= 2
            for member in object.members {
                let key = member.key
                try checkNestedKey(key)
                bound &+= 6 &* key.utf8.count &+ 4
                do throws(ValidationError) {
                    try checkNested(member.value, bound: &bound)
                } catch {
                    throw error.under("." + key)
                }
            }
        }
    }

    /// A key of an object nested in `properties` or in a custom attribute (relative path, as in `checkNested`).
    static func checkNestedKey(_ key: String) throws(ValidationError) {
        if key.isEmpty {
            throw ValidationError(field: "", rule: "must not have an empty key; keys are 1 to 255 characters")
        }
        if key.utf8.count > maxStringLength, case let count = scalarCount(key), count > maxStringLength {
            throw ValidationError(
                field: "." + key, rule: "is not a valid key: it must be 1 to 255 characters (got \(count))")
        }
        if key.utf8.first == UInt8(ascii: "$") {
            throw ValidationError(field: "." + key, rule: "is not a valid key: it must not start with $")
        }
        if let control = controlCharacter(inKey: key) {
            throw ValidationError(
                field: "." + key, rule: "is not a valid key: it must not contain control characters (found \(control))")
        }
    }

    // MARK: - Attributes

    /// One attribute of an attributes object: a standard profile field or a custom attribute.
    static func checkAttribute(key: String, value: JSONValue) throws(ValidationError) {
        switch Key(key) {
        case .email:
            if case .null = value { return }
            guard case .string(let email) = value else { throw typeError(key, "an email address", value) }
            try checkEmail(email, field: key)
        case .phone:
            if case .null = value { return }
            guard case .string(let phone) = value else { throw typeError(key, "a phone number", value) }
            try checkPhone(phone, field: key)
        case .firstName, .lastName, .homeCity:
            if case .null = value { return }
            guard case .string(let string) = value else { throw typeError(key, "a string", value) }
            try checkLength(string, field: key, allowEmpty: true)
        case .gender:
            try checkEnumeration(key, value, allowed: "M, F, O, N, P") { gender in
                gender == "M" || gender == "F" || gender == "O" || gender == "N" || gender == "P"
            }
        case .emailSubscribe, .pushSubscribe:
            try checkEnumeration(key, value, allowed: "opted_in, subscribed, unsubscribed") { state in
                state == "opted_in" || state == "subscribed" || state == "unsubscribed"
            }
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

    /// A profile field that is null (unset it) or a string in a checked format; `rule` describes the format.
    static func checkFormatted(
        _ field: String, _ value: JSONValue, rule: String, isValid: (String) -> Bool
    ) throws(ValidationError) {
        if case .null = value { return }
        guard case .string(let text) = value else {
            throw ValidationError(field: field, rule: "\(rule) (got \(value.typeName))")
        }
        guard isValid(text) else { throw ValidationError(field: field, rule: "\(rule) (got \(quoted(text)))") }
    }

    static func typeError(_ field: String, _ expected: String, _ value: JSONValue) -> ValidationError {
        ValidationError(field: field, rule: "must be \(expected) or null (got \(value.typeName))")
    }

    /// A string from a fixed set, or null; `allowed` lists the set for the error message.
    static func checkEnumeration(
        _ field: String, _ value: JSONValue, allowed: String, isAllowed: (String) -> Bool
    ) throws(ValidationError) {
        let got: String
        switch value {
        case .null: return
        case .string(let string):
            if isAllowed(string) { return }
            got = quoted(string)
        default:
            got = value.typeName
        }
        throw ValidationError(field: field, rule: "must be one of \(allowed) or null (got \(got))")
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
        if key.isEmpty {
            throw ValidationError(
                field: "record", rule: "must not have an empty key; attribute names are 1 to 255 characters")
        }
        if key.utf8.count > maxStringLength, case let count = scalarCount(key), count > maxStringLength {
            throw ValidationError(
                field: key, rule: "is not a valid attribute name: it must be 1 to 255 characters (got \(count))")
        }
        if key.utf8.first == UInt8(ascii: "$") {
            throw ValidationError(field: key, rule: "is not a valid attribute name: it must not start with $")
        }
        if let control = controlCharacter(inKey: key) {
            throw ValidationError(
                field: key,
                rule: "is not a valid attribute name: it must not contain control characters (found \(control))")
        }
        switch value {
        case .null, .bool, .number:
            return
        case .string(let string):
            try checkLength(string, field: key, allowEmpty: true)
        case .array(let items):
            do throws(ValidationError) {
                try checkStringArray(items)
            } catch {
                throw error.under(key)
            }
        case .object(let object):
            if let operation = object.members.first(where: { Key($0.key).isOperation }) {
                try checkOperation(operation, in: object, attribute: key)
            } else {
                var bound = 0
                do throws(ValidationError) {
                    try checkNested(value, bound: &bound)
                } catch {
                    throw error.under(key)
                }
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
        do throws(ValidationError) {
            try checkStringArray(items)
        } catch {
            throw error.under(attribute + "." + name)
        }
    }

    /// A custom attribute array, or the array of an `add` or `remove` operation (relative paths, as in
    /// `checkNested`).
    static func checkStringArray(_ items: [JSONValue]) throws(ValidationError) {
        guard items.count <= maxArrayItems else {
            throw ValidationError(field: "", rule: "must have at most \(maxArrayItems) items (got \(items.count))")
        }
        for index in items.indices {
            guard case .string(let string) = items[index] else {
                throw ValidationError(
                    field: "[\(index)]",
                    rule: "must be a string (got \(items[index].typeName)): attribute arrays hold only strings")
            }
            if string.utf8.count > maxStringLength {
                try checkLength(string, field: "[\(index)]", allowEmpty: true)
            }
        }
    }

    // MARK: - Email and phone

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
        for byte in email.utf8 {
            if byte <= 0x20 || byte == 0x7F {
                throw ValidationError(
                    field: field, rule: "must be an email address without whitespace or control characters")
            }
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
        if nonASCII {
            for scalar in email.unicodeScalars where scalar.properties.isWhitespace || isControl(scalar) {
                throw ValidationError(
                    field: field, rule: "must be an email address without whitespace or control characters")
            }
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

    // MARK: - Strings

    /// A string member: `allowEmpty` false means 1 to 255 characters, true means at most 255.
    static func checkString(_ value: JSONValue, field: String, allowEmpty: Bool) throws(ValidationError) {
        guard case .string(let string) = value else {
            throw ValidationError(field: field, rule: "must be a string (got \(value.typeName))")
        }
        try checkLength(string, field: field, allowEmpty: allowEmpty)
    }

    /// At most 255 Unicode scalars (and at least 1 unless `allowEmpty`).
    @inline(__always)
    static func checkLength(_ string: String, field: String, allowEmpty: Bool) throws(ValidationError) {
        let bytes = string.utf8.count
        if bytes == 0 {
            if allowEmpty { return }
            throw ValidationError(field: field, rule: "must be 1 to \(maxStringLength) characters (got 0)")
        }
        // A scalar takes 1 to 4 UTF-8 bytes: up to 255 bytes is always short enough.
        guard bytes > maxStringLength else { return }
        let count = scalarCount(string)
        guard count > maxStringLength else { return }
        let allowed = allowEmpty ? "at most \(maxStringLength)" : "1 to \(maxStringLength)"
        throw ValidationError(field: field, rule: "must be \(allowed) characters (got \(count))")
    }

    /// `string.unicodeScalars.count`, counted without decoding: every byte that is not a UTF-8 continuation byte
    /// starts a scalar.
    static func scalarCount(_ string: String) -> Int {
        if let count = string.utf8.withContiguousStorageIfAvailable({ buffer in
            var count = 0
            for byte in buffer where byte & 0xC0 != 0x80 { count &+= 1 }
            return count
        }) {
            return count
        }
        return string.unicodeScalars.count
    }

    /// C0 and C1 control characters and DEL (Unicode general category Cc).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// Whether `string` has a control character, checked on its UTF-8 bytes.
    static func hasControlCharacter(_ string: String) -> Bool {
        let found = string.utf8.withContiguousStorageIfAvailable { bytes in
            var previous: UInt8 = 0
            for byte in bytes {
                // U+0080...U+009F are C2 80...C2 9F in UTF-8.
                if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && byte >= 0x80 && byte <= 0x9F) { return true }
                previous = byte
            }
            return false
        }
        return found ?? string.unicodeScalars.contains(where: isControl)
    }

    /// The first control character of a key, described (`U+0000`), or nil. Keys are names: a NUL or escape
    /// sequence in one has no use, and a consumer that reads keys as C strings would see `external_id\u0000` as a
    /// second `external_id`.
    static func controlCharacter(inKey key: String) -> String? {
        hasControlCharacter(key) ? firstControlCharacter(key) : nil
    }

    /// The first control character in `string`, described for an error message, or nil.
    static func firstControlCharacter(_ string: String) -> String? {
        for scalar in string.unicodeScalars where isControl(scalar) { return describe(scalar) }
        return nil
    }

    /// `U+000A` for a control or whitespace character, the character in quotes otherwise.
    static func describe(_ scalar: Unicode.Scalar) -> String {
        if isControl(scalar) || scalar.properties.isWhitespace || scalar == "\"" {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return "\"" + String(scalar) + "\""
    }

    /// A value quoted for an error message: at most 40 characters, control characters escaped.
    static func quoted(_ string: String) -> String {
        var result = "\""
        var count = 0
        for scalar in string.unicodeScalars {
            if count == 40 {
                result += "…\" (\(scalarCount(string)) characters)"
                return result
            }
            count += 1
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            default:
                if isControl(scalar) {
                    result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }

    static func notAField(_ key: String, of object: String) -> ValidationError {
        if key.isEmpty {
            return ValidationError(field: "record", rule: "must not have an empty key (not a field of \(object))")
        }
        return ValidationError(field: key, rule: "is not a field of \(object)")
    }

    static func checkBoolean(_ value: JSONValue, field: String) throws(ValidationError) {
        guard case .bool = value else {
            throw ValidationError(field: field, rule: "must be a boolean (got \(value.typeName))")
        }
    }
}

extension ValidationError {
    /// This error, with a relative field path (`""`, `.key`, `[3]`) put under `parent`.
    fileprivate func under(_ parent: String) -> ValidationError {
        var error = self
        error.field = parent + field
        return error
    }
}
