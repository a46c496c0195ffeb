import Foundation

/// Braze's documented `/users/track` rules, checked with Foundation's `JSONSerialization` rather than the
/// EventQueue module, so the fake is an independent check of what the sink sends.
enum FakeBrazeContract {
    static let arrays = ["attributes", "events", "purchases"]
    static let maxPerArray = 75

    /// One object of an accepted request. Its JSON text is not kept here: re-serializing 75 objects per request
    /// cost the fake more CPU than the daemon spends per record, so `/_received` re-reads it from the body.
    struct CheckedObject {
        var array: String
        var index: Int
        /// Why Braze would refuse it (it then appears in `errors`); `nil` when valid.
        var error: String?
    }

    enum Verdict {
        /// The request as a whole is refused: 400 with this message.
        case malformed(String)
        case checked([CheckedObject])
    }

    /// The body parsed once per request (the users in flight and the contract check both read it); `nil` when
    /// it is not JSON.
    static func parse(_ body: Data) -> Any? {
        try? JSONSerialization.jsonObject(with: body, options: [])
    }

    static func check(body: Data, maxObjectsPerRequest: Int?, rejectMarker: String?) -> Verdict {
        check(parsed: parse(body), maxObjectsPerRequest: maxObjectsPerRequest, rejectMarker: rejectMarker)
    }

    static func check(parsed: Any?, maxObjectsPerRequest: Int?, rejectMarker: String?) -> Verdict {
        guard let parsed else { return .malformed("Invalid JSON") }
        guard let root = parsed as? [String: Any] else { return .malformed("The body must be a JSON object") }
        if let unknown = root.keys.sorted().first(where: { !arrays.contains($0) }) {
            return .malformed("Unknown key '\(unknown)': only attributes, events and purchases are accepted")
        }
        var total = 0
        var objects: [CheckedObject] = []
        for array in arrays {
            guard let value = root[array] else { continue }
            guard let elements = value as? [Any] else { return .malformed("'\(array)' must be an array") }
            guard elements.count <= maxPerArray else { return .malformed("Max Input Length Exceeded") }
            total += elements.count
            for (index, element) in elements.enumerated() {
                guard let object = element as? [String: Any] else {
                    return .malformed("'\(array)' must hold objects")
                }
                var error = validate(object, array: array)
                if error == nil, let rejectMarker, containsMarker(object, rejectMarker) {
                    error = "fake-braze: refused by the reject marker"
                }
                objects.append(CheckedObject(array: array, index: index, error: error))
            }
        }
        if total == 0 { return .malformed("The request holds no attributes, events or purchases") }
        if let maxObjectsPerRequest, total > maxObjectsPerRequest {
            return .malformed("Max Input Length Exceeded (at most \(maxObjectsPerRequest) objects per request)")
        }
        return .checked(objects)
    }

    /// The object as JSON text with sorted keys.
    static func canonical(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return "null"
        }
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: Objects

    static func validate(_ object: [String: Any], array: String) -> String? {
        if let error = identifierError(object, array: array) { return error }
        if let flag = object["_update_existing_only"], !isBool(flag) {
            return "'_update_existing_only' must be a boolean"
        }
        switch array {
        case "events":
            guard let name = object["name"] as? String, !name.isEmpty, name.count <= 255 else {
                return "Invalid 'name' field"
            }
            if let error = timeError(object) { return error }
            if let error = propertiesError(object) { return error }
        case "purchases":
            guard let product = object["product_id"] as? String, !product.isEmpty, product.count <= 255 else {
                return "Invalid 'product_id' field"
            }
            guard let currency = object["currency"] as? String, currency.count == 3,
                currency.unicodeScalars.allSatisfy({ $0.value >= 0x41 && $0.value <= 0x5A })
            else { return "Invalid 'currency' field: expected a 3-letter ISO 4217 code" }
            guard let price = object["price"], isNumber(price) else { return "Invalid 'price' field" }
            if let quantity = object["quantity"] {
                guard let value = integer(quantity), (1...100).contains(value) else {
                    return "Invalid 'quantity' field: an integer from 1 to 100"
                }
            }
            if let error = timeError(object) { return error }
            if let error = propertiesError(object) { return error }
        default:
            for (key, value) in object {
                if let text = value as? String, text.count > 255 { return "Attribute '\(key)' is too long" }
            }
        }
        return nil
    }

    static let primaryIdentifiers = ["external_id", "braze_id", "user_alias"]

    /// Exactly one user: in an attributes object `email` and `phone` are attributes when another identifier is
    /// present (and `phone` is one when `email` names the user).
    static func identifierError(_ object: [String: Any], array: String) -> String? {
        let primary = primaryIdentifiers.filter { object[$0] != nil }
        let contact = ["email", "phone"].filter { object[$0] != nil }
        let identifiers: [String]
        if array == "attributes" {
            identifiers = primary.isEmpty ? Array(contact.prefix(1)) : primary
        } else {
            identifiers = primary + contact
        }
        guard !identifiers.isEmpty else {
            return "'external_id', 'braze_id', 'user_alias', 'email' or 'phone' is required"
        }
        guard identifiers.count == 1, let identifier = identifiers.first else {
            return "Received too many identifiers: \(identifiers.joined(separator: ", "))"
        }
        if identifier == "user_alias" {
            guard let alias = object["user_alias"] as? [String: Any], alias.count == 2,
                let name = alias["alias_name"] as? String, !name.isEmpty,
                let label = alias["alias_label"] as? String, !label.isEmpty
            else { return "Invalid 'user_alias': needs non-empty 'alias_name' and 'alias_label'" }
            return nil
        }
        guard let value = object[identifier] as? String, !value.isEmpty, value.count <= 255 else {
            return "Invalid '\(identifier)'"
        }
        return nil
    }

    static func timeError(_ object: [String: Any]) -> String? {
        guard let time = object["time"] as? String, isISO8601(time) else {
            return "Invalid 'time' field: an ISO 8601 time is required"
        }
        return nil
    }

    static let reservedProperties: Set<String> = ["time", "event_name"]

    static func propertiesError(_ object: [String: Any]) -> String? {
        guard let value = object["properties"] else { return nil }
        guard let properties = value as? [String: Any] else { return "'properties' must be an object" }
        guard properties.count <= 256 else { return "Too many properties (at most 256)" }
        for (key, value) in properties {
            guard !key.isEmpty, key.count <= 255, !key.hasPrefix("$"), !reservedProperties.contains(key) else {
                return "Invalid property key '\(key.prefix(40))'"
            }
            if let text = value as? String, text.count > 255 { return "Property '\(key)' is too long" }
        }
        return nil
    }

    static func containsMarker(_ object: [String: Any], _ marker: String) -> Bool {
        for value in object.values {
            if let text = value as? String, text == marker { return true }
        }
        if let properties = object["properties"] as? [String: Any] {
            return properties.values.contains { ($0 as? String) == marker }
        }
        return false
    }

    // MARK: Values

    /// JSONSerialization gives booleans as NSNumbers whose type encoding is `c`.
    static func isBool(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    static func isNumber(_ value: Any) -> Bool {
        value is NSNumber && !isBool(value)
    }

    static func integer(_ value: Any) -> Int? {
        guard isNumber(value), let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        guard double == double.rounded(), abs(double) < 1e15 else { return nil }
        return Int(double)
    }

    /// `YYYY-MM-DDTHH:MM:SS`, optional fraction (`.` or, in Braze's other format, `:`), then `Z` or an offset
    /// (`+HH:MM`, `+HHMM`, `+HH`).
    static func isISO8601(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Bool {
            range.upperBound <= bytes.count && range.allSatisfy { bytes[$0] >= 0x30 && bytes[$0] <= 0x39 }
        }
        func byte(_ index: Int, _ expected: Character) -> Bool {
            index < bytes.count && bytes[index] == expected.asciiValue
        }
        guard digits(0..<4), byte(4, "-"), digits(5..<7), byte(7, "-"), digits(8..<10), byte(10, "T"),
            digits(11..<13), byte(13, ":"), digits(14..<16), byte(16, ":"), digits(17..<19)
        else { return false }
        var position = 19
        if byte(position, ".") || byte(position, ":") {
            position += 1
            let start = position
            while digits(position..<(position + 1)) { position += 1 }
            guard position > start else { return false }
        }
        if byte(position, "Z") { return position + 1 == bytes.count }
        guard byte(position, "+") || byte(position, "-"), digits((position + 1)..<(position + 3)) else { return false }
        let rest = bytes.count - (position + 3)
        if rest == 0 { return true }
        if rest == 2 { return digits((position + 3)..<(position + 5)) }
        return rest == 3 && byte(position + 3, ":") && digits((position + 4)..<(position + 6))
    }
}
