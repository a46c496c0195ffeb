import EventQueue

/// Turns an old store's three arrays into records for one user.
enum LegacyEntries {
    /// Every entry of the store, in order: events, then custom attributes, then profile fields. `time` (ISO 8601)
    /// is given to events, which the recipe stored without one.
    static func plan(_ store: LegacyStore, user: UserIdentity, time: String?) -> [LegacyEntry] {
        var entries: [LegacyEntry] = []
        let generation = store.generation
        for section in LegacyStore.sections {
            for (index, item) in store.items(section).enumerated() {
                let key = idempotencyKey(generation: generation, section: section, index: index, item: item)
                let plan: LegacyEntry.Plan
                switch section {
                case "pending_custom_events": plan = event(item, user: user, time: time, key: key)
                case "pending_custom_attributes": plan = attributes(item, user: user, key: key)
                default: plan = userAttribute(item, user: user, key: key)
                }
                entries.append(LegacyEntry(section: section, index: index, plan: plan))
            }
        }
        return entries
    }

    /// `legacy:G:SECTION:INDEX:DIGEST`, from the entry's position, its content, and how many times the store was
    /// cleared: the same entry gives the same key on every run, so a second import enqueues nothing.
    static func idempotencyKey(generation: Int, section: String, index: Int, item: LegacyStore.Item) -> String {
        var content: [UInt8]
        switch item {
        case .value(let value, _):
            content = Array("json:".utf8)
            sortedKeys(value).serialize(into: &content)
        case .data(let bytes):
            content = Array("data:".utf8) + bytes
        }
        let short: String
        switch section {
        case "pending_custom_events": short = "event"
        case "pending_custom_attributes": short = "attribute"
        default: short = "user"
        }
        return "legacy:\(generation):\(short):\(index):" + hexDigits(SHA256.hash(content)).prefix(32)
    }

    static func sortedKeys(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let object):
            var sorted = JSONObject()
            for key in object.keys.sorted() {
                if let element = object[key] { sorted[key] = sortedKeys(element) }
            }
            return .object(sorted)
        case .array(let array):
            return .array(array.map(sortedKeys))
        default:
            return value
        }
    }

    // MARK: - Custom events and attributes

    static func event(_ item: LegacyStore.Item, user: UserIdentity, time: String?, key: String) -> LegacyEntry.Plan {
        guard case .value(.object(let object), let binary) = item else {
            return .unrecognized("a custom event must be a dictionary")
        }
        var properties = object
        properties["event_name"] = nil
        let name = object["event_name"]?.stringValue
        let record = Record.event(name ?? "", user: user, properties: properties, time: time, idempotencyKey: key)
        if name == nil {
            return .deadLetter(record, reason: "event_name is missing or not a string; set the name, then retry")
        }
        if !binary.isEmpty { return .deadLetter(record, reason: binaryReason(binary)) }
        return .record(record)
    }

    static func attributes(_ item: LegacyStore.Item, user: UserIdentity, key: String) -> LegacyEntry.Plan {
        guard case .value(.object(let object), let binary) = item else {
            return .unrecognized("a custom attribute entry must be a dictionary")
        }
        let identityKey = user.brazeMember.key
        if object[identityKey] != nil {
            var others = object
            others[identityKey] = nil
            return .deadLetter(
                Record.attributes(others, user: user, idempotencyKey: key),
                reason: identityConflict(identityKey, keptTheRest: true))
        }
        let record = Record.attributes(object, user: user, idempotencyKey: key)
        if !binary.isEmpty { return .deadLetter(record, reason: binaryReason(binary)) }
        return .record(record)
    }

    /// An entry that sets the very field that names the user given to the import would, merged into one Braze
    /// object, replace that user: the entry's attributes would go to someone else.
    static func identityConflict(_ key: String, keptTheRest: Bool) -> String {
        "sets \(key), the field that names the user given to import-legacy, so it would change whose record this "
            + "is; "
            + (keptTheRest
                ? "kept without it: retry to set the rest for that user, or purge the dead letter"
                : "import it with another identity, or purge the dead letter")
    }

    static func binaryReason(_ paths: [String]) -> String {
        "\(paths.joined(separator: ", ")) held binary data, which Braze cannot take (kept as base64 text): fix it "
            + "or purge the dead letter"
    }

    // MARK: - Profile fields (PropertyListEncoder-encoded enum values)

    static func userAttribute(_ item: LegacyStore.Item, user: UserIdentity, key: String) -> LegacyEntry.Plan {
        let decoded: JSONValue
        switch item {
        case .data(let bytes):
            guard let value = decodePropertyList(bytes) else {
                return .unrecognized("a user attribute that is not a property list")
            }
            decoded = value
        case .value(.string(let base64), _):
            guard let data = PropertyListValue.base64Decoded(base64), let value = decodePropertyList(data) else {
                return .unrecognized("a user attribute that is not a base64 property list")
            }
            decoded = value
        case .value(let value, _):
            decoded = value
        }
        guard case .object(let wrapper) = decoded, wrapper.count == 1, let member = wrapper.members.first else {
            return .unrecognized("a user attribute must be an encoded enum value such as {\"email\": {\"_0\": ...}}")
        }
        let caseName = member.key
        var value: JSONValue?
        if case .object(let payload) = member.value {
            if payload.count == 1 { value = payload.members.first?.value }
        } else {
            value = member.value
        }
        guard let field = standardField(caseName) else {
            let record = Record.attribute(caseName, value ?? .null, user: user, idempotencyKey: key)
            return .deadLetter(
                record,
                reason: "\(caseName) is not a standard Braze profile field: retry to send it as the custom "
                    + "attribute \(caseName), or purge the dead letter")
        }
        guard let value else {
            let record = Record.attribute(field, .null, user: user, idempotencyKey: key)
            return .deadLetter(record, reason: "\(caseName) carries no value (expected one, as {\"_0\": value})")
        }
        if field == user.brazeMember.key {
            let record = Record.attribute(field, normalize(field: field, value), user: user, idempotencyKey: key)
            return .deadLetter(record, reason: identityConflict(field, keptTheRest: false))
        }
        return .record(Record.attribute(field, normalize(field: field, value), user: user, idempotencyKey: key))
    }

    static func decodePropertyList(_ bytes: [UInt8]) -> JSONValue? {
        guard let value = try? PropertyListValue.parse(bytes).value else { return nil }
        var binary: [String] = []
        return value.json(path: "", binary: &binary)
    }

    /// The Braze field for an enum case of the recipe's `UserAttribute` (Swift spelling or Braze's own).
    static func standardField(_ caseName: String) -> String? {
        switch String(caseName.lowercased().filter { $0 != "_" }) {
        case "email", "emailaddress": return "email"
        case "firstname": return "first_name"
        case "lastname": return "last_name"
        case "phone", "phonenumber": return "phone"
        case "gender": return "gender"
        case "dob", "dateofbirth", "birthday", "birthdate": return "dob"
        case "country": return "country"
        case "language": return "language"
        case "homecity": return "home_city"
        case "timezone": return "time_zone"
        case "emailsubscribe", "emailsubscription", "emailsubscriptionstate": return "email_subscribe"
        case "pushsubscribe", "pushsubscription", "pushsubscriptionstate", "pushnotificationsubscriptiontype":
            return "push_subscribe"
        default: return nil
        }
    }

    /// A value as the Swift SDK's types would have given it, spelled as Braze's API takes it: a nested enum
    /// (`{"male": {}}`) by its case, genders as `M`/`F`/..., subscription states in snake case, a date of birth
    /// (a property-list date) as `YYYY-MM-DD`.
    static func normalize(field: String, _ value: JSONValue) -> JSONValue {
        var value = value
        if case .object(let nested) = value, nested.count == 1, let only = nested.members.first,
            case .object(let empty) = only.value, empty.isEmpty
        {
            value = .string(only.key)
        }
        guard case .string(let text) = value else { return value }
        let folded = String(text.lowercased().filter { $0 != "_" })
        switch field {
        case "gender":
            switch folded {
            case "m", "male": return "M"
            case "f", "female": return "F"
            case "o", "other": return "O"
            case "n", "unknown", "notapplicable": return "N"
            case "p", "prefernottosay": return "P"
            default: return value
            }
        case "email_subscribe", "push_subscribe":
            switch folded {
            case "optedin": return "opted_in"
            case "subscribed": return "subscribed"
            case "unsubscribed": return "unsubscribed"
            default: return value
            }
        case "dob":
            if text.utf8.count > 10, ISO8601.parse(text) != nil { return .string(String(text.prefix(10))) }
            return value
        default:
            return value
        }
    }
}
