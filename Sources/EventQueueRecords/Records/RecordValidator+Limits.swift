/// The limits of Braze's API that records are held to, and the checks of plain values against them.
extension RecordValidator {
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

    /// Serializes `object` to measure it, but only when `bound` (from `checkNested`) says it might be too large.
    static func checkSize(_ object: JSONObject, bound: Int, limit: Int, field: String) throws(ValidationError) {
        guard bound > limit else { return }
        let size = JSONValue.object(object).serialized.utf8.count
        guard size <= limit else {
            throw ValidationError(field: field, rule: "must serialize to at most \(limit) bytes (got \(size))")
        }
    }

    static func checkBoolean(_ value: JSONValue, field: String) throws(ValidationError) {
        guard case .bool = value else {
            throw ValidationError(field: field, rule: "must be a boolean (got \(value.typeName))")
        }
    }
}
