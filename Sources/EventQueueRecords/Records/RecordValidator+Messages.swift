/// Control characters (refused in names and identifiers, escaped in messages) and how a rule shows what it found:
/// quoted values, described characters, lists of keys.
extension RecordValidator {
    /// `a`, `a and b`, `a, b and c`.
    static func list(_ items: [String]) -> String {
        guard let last = items.last else { return "" }
        guard items.count > 1 else { return last }
        return items.dropLast().joined(separator: ", ") + " and " + last
    }

    /// C0 and C1 control characters and DEL (Unicode general category Cc).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `\u{1B}`: how a control character is written in a message, where the raw character would rewrite or
    /// truncate what a terminal or a log shows.
    static func escaped(_ scalar: Unicode.Scalar) -> String {
        "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
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

    /// The first control character of a key or identifier, described (`U+0000`), or nil: a consumer that reads
    /// keys as C strings would see `external_id\u0000` as a second `external_id`.
    static func controlCharacter(in string: String) -> String? {
        guard hasControlCharacter(string) else { return nil }
        return string.unicodeScalars.first(where: isControl).map(describe)
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
        let shown = string.unicodeScalars.prefix(40).map { scalar -> String in
            switch scalar {
            case "\"": "\\\""
            case "\\": "\\\\"
            default: isControl(scalar) ? escaped(scalar) : String(scalar)
            }
        }
        let count = scalarCount(string)
        return "\"" + shown.joined() + (count > 40 ? "…\" (\(count) characters)" : "\"")
    }

    static func notAField(_ key: String, of object: String) -> ValidationError {
        if key.isEmpty {
            return ValidationError(field: "record", rule: "must not have an empty key (not a field of \(object))")
        }
        return ValidationError(field: key, rule: "is not a field of \(object)")
    }
}
