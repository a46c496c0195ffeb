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
        let short = ["pending_custom_events": "event", "pending_custom_attributes": "attribute"][section] ?? "user"
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

    /// A profile field: an enum value of the recipe's `UserAttribute`, as PropertyListEncoder encoded it.
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
        standardFields[String(caseName.lowercased().filter { $0 != "_" })]
    }

    /// `standardField`'s table, by the case's name lowercased and without underscores.
    static let standardFields = [
        "email": "email", "emailaddress": "email", "firstname": "first_name", "lastname": "last_name",
        "phone": "phone", "phonenumber": "phone", "gender": "gender", "dob": "dob", "dateofbirth": "dob",
        "birthday": "dob", "birthdate": "dob", "country": "country", "language": "language", "homecity": "home_city",
        "timezone": "time_zone", "emailsubscribe": "email_subscribe", "emailsubscription": "email_subscribe",
        "emailsubscriptionstate": "email_subscribe", "pushsubscribe": "push_subscribe",
        "pushsubscription": "push_subscribe", "pushsubscriptionstate": "push_subscribe",
        "pushnotificationsubscriptiontype": "push_subscribe",
    ]

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
            let genders = [
                "m": "M", "male": "M", "f": "F", "female": "F", "o": "O", "other": "O", "n": "N", "unknown": "N",
                "notapplicable": "N", "p": "P", "prefernottosay": "P",
            ]
            return genders[folded].map(JSONValue.string) ?? value
        case "email_subscribe", "push_subscribe":
            let states = ["optedin": "opted_in", "subscribed": "subscribed", "unsubscribed": "unsubscribed"]
            return states[folded].map(JSONValue.string) ?? value
        case "dob":
            if text.utf8.count > 10, ISO8601.parse(text) != nil { return .string(String(text.prefix(10))) }
            return value
        default:
            return value
        }
    }
}

/// One entry of an old store and the record it stands for.
struct LegacyEntry {
    enum Plan {
        /// A record to enqueue (checked at enqueue; a rule broken makes it a dead letter with the rule).
        case record(Record)
        /// A record that is known to be wrong before it is checked (binary data, an unknown profile field).
        case deadLetter(Record, reason: String)
        /// Not understood at all: left in the store, never cleared.
        case unrecognized(String)
    }

    let section: String
    let index: Int
    let plan: Plan

    /// `pending_custom_events[2]`: how the summary and dead-letter reasons name the entry.
    var label: String { "\(section)[\(index)]" }
}
