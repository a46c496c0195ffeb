/// One spelling for every JSON value that Braze receives as the same value: what `IdempotencyKey.digest` hashes,
/// so that a retry by another writer spelled differently (members in another order, `1.0` for `1`) is still the
/// same record. The record stored and sent keeps its own spelling. The form is specified in docs/SCHEMA.md,
/// "Idempotency keys".
package enum CanonicalJSON {
    /// The canonical form of `object`, as UTF-8.
    package static func bytes(of object: JSONObject) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(256)
        append(object, to: &buffer)
        return buffer
    }

    private static func append(_ value: JSONValue, to buffer: inout [UInt8]) {
        switch value {
        case .null: buffer.append(contentsOf: "null".utf8)
        case .bool(let flag): buffer.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let number): buffer.append(contentsOf: canonicalNumber(number.text).utf8)
        case .string(let string): JSONValue.appendQuoted(string, to: &buffer)
        case .object(let object): append(object, to: &buffer)
        case .array(let elements):
            buffer.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                append(element, to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        }
    }

    private static func append(_ object: JSONObject, to buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "{"))
        let members = object.members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        for (index, member) in members.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            JSONValue.appendQuoted(member.key, to: &buffer)
            buffer.append(UInt8(ascii: ":"))
            append(member.value, to: &buffer)
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// `text` (a valid JSON number, as `JSONNumber` keeps it) as its exact decimal value in the canonical form.
    package static func canonicalNumber(_ text: String) -> String {
        let bytes = Array(text.utf8)
        func isDigit(_ index: Int) -> Bool { index < bytes.count && bytes[index] >= 0x30 && bytes[index] <= 0x39 }
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        var digits: [UInt8] = []
        var exponent = 0
        while isDigit(index) {
            digits.append(bytes[index])
            index += 1
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while isDigit(index) {
                digits.append(bytes[index])
                exponent -= 1
                index += 1
            }
        }
        guard let first = digits.firstIndex(where: { $0 != UInt8(ascii: "0") }) else { return "0" }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            let sign = index < bytes.count && bytes[index] == UInt8(ascii: "-") ? -1 : 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                index += 1
            }
            while index + 1 < bytes.count, bytes[index] == UInt8(ascii: "0") { index += 1 }
            guard bytes.count - index <= 15, let written = Int(String(decoding: bytes[index...], as: UTF8.self))
            else { return text }
            exponent += sign * written
        }
        var significant = digits[first...]
        while significant.last == UInt8(ascii: "0") {
            significant.removeLast()
            exponent += 1
        }
        return (negative ? "-" : "") + String(decoding: significant, as: UTF8.self)
            + (exponent == 0 ? "" : "e" + String(exponent))
    }
}
