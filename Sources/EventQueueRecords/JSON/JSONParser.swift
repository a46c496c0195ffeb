extension JSONValue {
    /// Parses exactly one strict RFC 8259 JSON value, surrounded by optional whitespace.
    ///
    /// Strict because a queue stores what it accepted for later delivery: anything a lenient parser would
    /// guess at (duplicate keys, lone surrogates, `NaN`, trailing commas) is rejected at enqueue, where the
    /// writer can still be told.
    public static func parse(_ text: String, limits: JSONParseLimits = .init()) throws(JSONParseError) -> JSONValue {
        try parse(utf8: text.utf8, limits: limits)
    }

    /// Parses exactly one strict RFC 8259 JSON value from UTF-8 bytes, validating the encoding (unlike
    /// `String(decoding:as:)`, invalid UTF-8 is an error, not U+FFFD). Contiguous collections are parsed in place;
    /// anything else is copied once.
    public static func parse(
        utf8 bytes: some Collection<UInt8>,
        limits: JSONParseLimits = .init()
    ) throws(JSONParseError) -> JSONValue {
        let body = { (buffer: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> in
            Result { () throws(JSONParseError) -> JSONValue in
                var parser = JSONByteParser(bytes: buffer, maxDepth: limits.maxDepth)
                return try parser.parseDocument()
            }
        }
        if let result = bytes.withContiguousStorageIfAvailable(body) {
            return try result.get()
        }
        return try Array(bytes).withUnsafeBufferPointer(body).get()
    }
}

extension JSONNumber {
    /// Wraps text the parser has already checked against the number grammar and for overflow, skipping the
    /// second validation `init?(text:)` would do.
    init(validatedText text: String) {
        self.text = text
    }
}

/// The parser state: one pass over UTF-8 bytes, iterative (an explicit stack, so depth is bounded by `maxDepth`,
/// never by the thread's stack).
struct JSONByteParser {
    private enum Kind {
        case root
        case array
        case object
    }

    /// One open container. Only the innermost frame is mutated; parents wait on `stack`.
    private struct Frame {
        var kind: Kind
        var elements: [JSONValue] = []
        var members: [JSONObject.Member] = []
        /// The key whose value is being parsed.
        var key: String = ""
        /// Built once an object grows past `linearKeyLimit` members, so duplicate checks stay O(1).
        var keyIndex: Set<String>? = nil

        init(kind: Kind) {
            self.kind = kind
            // Growing from empty would reallocate four times before a typical event object is complete.
            switch kind {
            case .root: break
            case .array: elements.reserveCapacity(8)
            case .object: members.reserveCapacity(8)
            }
        }
    }

    /// Up to this many members, duplicate keys are found by a linear scan (faster than hashing small objects).
    private static let linearKeyLimit = 16

    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    private(set) var index = 0
    /// Reused buffer for strings that contain escapes.
    private var scratch: [UInt8] = []

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    // MARK: Document structure

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF {
            throw JSONParseError(offset: 0, message: "byte order mark (U+FEFF) is not allowed")
        }
        var stack: [Frame] = []
        var current = Frame(kind: .root)
        var value: JSONValue
        skipWhitespace()
        nextValue: while true {
            guard index < bytes.count else { throw unexpectedEnd(expected: "a JSON value") }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                value = .string(try parseString())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = .number(try parseNumber())
            case UInt8(ascii: "{"):
                guard stack.count < maxDepth else { throw tooDeep() }
                index += 1
                skipWhitespace()
                if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    value = .object(JSONObject())
                } else {
                    stack.append(current)
                    current = Frame(kind: .object)
                    try parseKey(into: &current, afterComma: false)
                    continue nextValue
                }
            case UInt8(ascii: "["):
                guard stack.count < maxDepth else { throw tooDeep() }
                index += 1
                skipWhitespace()
                if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    value = .array([])
                } else {
                    stack.append(current)
                    current = Frame(kind: .array)
                    continue nextValue
                }
            case UInt8(ascii: "t"):
                try expectLiteral(0x74_72_75_65, length: 4)  // "true"
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral(0x66_61_6C_73_65, length: 5)  // "false"
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral(0x6E_75_6C_6C, length: 4)  // "null"
                value = .null
            default:
                throw invalidValueStart()
            }

            // A value is complete: hand it to its container, closing containers as long as they end here.
            while true {
                switch current.kind {
                case .root:
                    skipWhitespace()
                    guard index == bytes.count else {
                        throw unexpected(expected: "end of input after the JSON value")
                    }
                    return value
                case .array:
                    current.elements.append(Self.take(&value))
                    skipWhitespace()
                    guard index < bytes.count else { throw unexpectedEnd(expected: "',' or ']'") }
                    let byte = bytes[index]
                    if byte == UInt8(ascii: ",") {
                        index += 1
                        skipWhitespace()
                        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
                            throw JSONParseError(offset: index, message: "trailing comma in array")
                        }
                        continue nextValue
                    }
                    guard byte == UInt8(ascii: "]") else { throw unexpected(expected: "',' or ']'") }
                    index += 1
                    var elements: [JSONValue] = []
                    swap(&elements, &current.elements)  // moves the array out without a retain/release pair
                    current = stack.popLast() ?? Frame(kind: .root)
                    value = .array(elements)
                case .object:
                    let key = current.key
                    current.key = ""
                    current.members.append(JSONObject.Member(key: key, value: Self.take(&value)))
                    skipWhitespace()
                    guard index < bytes.count else { throw unexpectedEnd(expected: "',' or '}'") }
                    let byte = bytes[index]
                    if byte == UInt8(ascii: ",") {
                        index += 1
                        skipWhitespace()
                        try parseKey(into: &current, afterComma: true)
                        continue nextValue
                    }
                    guard byte == UInt8(ascii: "}") else { throw unexpected(expected: "',' or '}'") }
                    index += 1
                    var members: [JSONObject.Member] = []
                    swap(&members, &current.members)
                    current = stack.popLast() ?? Frame(kind: .root)
                    value = .object(JSONObject(members: members))
                }
            }
        }
    }

    /// Moves a value out of a variable (leaving `null`), so handing it to a container costs no retain/release
    /// pair. (`consume` would say this directly, but Swift 6.3 miscompiles it here: a double release when an
    /// error is thrown after the consume in an unoptimized build.)
    @inline(__always)
    private static func take(_ value: inout JSONValue) -> JSONValue {
        var taken = JSONValue.null
        swap(&taken, &value)
        return taken
    }

    /// Reads `"key" :` (and the whitespace after it), rejecting a key the object already has.
    private mutating func parseKey(into frame: inout Frame, afterComma: Bool) throws(JSONParseError) {
        guard index < bytes.count else { throw unexpectedEnd(expected: "a string key") }
        guard bytes[index] == UInt8(ascii: "\"") else {
            if afterComma && bytes[index] == UInt8(ascii: "}") {
                throw JSONParseError(offset: index, message: "trailing comma in object")
            }
            throw unexpected(expected: "a string key")
        }
        let keyOffset = index
        let key = try parseString()
        if frame.keyIndex != nil {
            if frame.keyIndex?.insert(key).inserted == false { throw duplicateKey(key, at: keyOffset) }
        } else {
            // Borrowing through the buffer avoids retaining every member while comparing.
            let isDuplicate = frame.members.withUnsafeBufferPointer { members in
                members.contains { $0.key == key }
            }
            if isDuplicate { throw duplicateKey(key, at: keyOffset) }
            if frame.members.count >= Self.linearKeyLimit {
                var keys = Set(frame.members.lazy.map(\.key))
                keys.insert(key)
                frame.keyIndex = keys
            }
        }
        frame.key = key
        skipWhitespace()
        guard index < bytes.count else { throw unexpectedEnd(expected: "':'") }
        guard bytes[index] == UInt8(ascii: ":") else { throw unexpected(expected: "':' after the key") }
        index += 1
        skipWhitespace()
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    // MARK: Scalars

    /// Matches a literal given as big-endian packed ASCII bytes.
    private mutating func expectLiteral(_ packed: UInt64, length: Int) throws(JSONParseError) {
        if bytes.count - index >= length {
            var matches = true
            for position in 0..<length {
                let expected = UInt8(truncatingIfNeeded: packed >> UInt64(8 * (length - 1 - position)))
                if bytes[index + position] != expected {
                    matches = false
                    break
                }
            }
            if matches {
                index += length
                return
            }
        }
        throw invalidLiteral()
    }

    /// Parses a number, keeping its text. Only numbers that might exceed `Double` (more than 308 digits before
    /// the point once the exponent is applied) pay for a conversion.
    private mutating func parseNumber() throws(JSONParseError) -> JSONNumber {
        let start = index
        var position = index
        let end = bytes.count
        if bytes[position] == UInt8(ascii: "-") {
            position += 1
            guard position < end, isDigit(bytes[position]) else {
                throw JSONParseError(offset: position, message: "invalid number: expected a digit after '-'")
            }
        }
        let integerStart = position
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if position < end && isDigit(bytes[position]) {
                throw JSONParseError(offset: start, message: "invalid number: leading zeros are not allowed")
            }
        } else {
            while position < end && isDigit(bytes[position]) { position += 1 }
        }
        let integerDigits = position - integerStart
        if position < end && bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard position < end, isDigit(bytes[position]) else {
                throw JSONParseError(offset: position, message: "invalid number: expected a digit after '.'")
            }
            while position < end && isDigit(bytes[position]) { position += 1 }
        }
        // The value is below 10^(integerDigits + exponent); up to 10^308 it is certainly finite.
        var magnitude = integerDigits
        if position < end && (bytes[position] | 0x20) == UInt8(ascii: "e") {
            position += 1
            var exponentSign = 1
            if position < end && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")) {
                if bytes[position] == UInt8(ascii: "-") { exponentSign = -1 }
                position += 1
            }
            guard position < end, isDigit(bytes[position]) else {
                throw JSONParseError(offset: position, message: "invalid number: expected a digit in the exponent")
            }
            var exponent = 0
            while position < end && isDigit(bytes[position]) {
                exponent = min(exponent * 10 + Int(bytes[position] &- UInt8(ascii: "0")), 1_000_000_000)
                position += 1
            }
            magnitude += exponentSign * exponent
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if magnitude > 308 {
            guard let double = Double(text), double.isFinite else {
                throw JSONParseError(offset: start, message: "number out of range")
            }
        }
        index = position
        return JSONNumber(validatedText: text)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    // MARK: Strings

    /// Parses a string at its opening quote; one without escapes becomes a `String` straight from the bytes.
    private mutating func parseString() throws(JSONParseError) -> String {
        let contentStart = index + 1
        var position = contentStart
        let end = bytes.count
        while true {
            position = firstSpecialByte(from: position)
            guard position < end else { break }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                index = position + 1
                return String(
                    decoding: UnsafeBufferPointer(rebasing: bytes[contentStart..<position]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                return try parseEscapedString(contentStart: contentStart, firstEscape: position)
            }
            if byte < 0x20 { throw controlCharacter(at: position) }
            if byte < 0x80 {
                position += 1
            } else {
                position += try utf8SequenceLength(at: position)
            }
        }
        throw JSONParseError(offset: contentStart - 1, message: "unterminated string")
    }

    /// Skips plain string content eight bytes at a time: returns the offset of the first byte at or after
    /// `start` that is `"`, `\`, a control character or non-ASCII, or else a position at most 7 bytes before
    /// the end (the caller checks those one by one).
    @inline(__always)
    private func firstSpecialByte(from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return start }
        var position = start
        while bytes.count - position >= 8 {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
            let flags = JSONWriter.escapeFlags(word) | word & 0x8080_8080_8080_8080
            if flags != 0 { return position + flags.trailingZeroBitCount >> 3 }
            position += 8
        }
        return position
    }

    /// The slow path: decodes escapes into `scratch`, copying unescaped runs in bulk.
    private mutating func parseEscapedString(contentStart: Int, firstEscape: Int) throws(JSONParseError) -> String {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[contentStart..<firstEscape]))
        var position = firstEscape
        let end = bytes.count
        while position < end {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                index = position + 1
                return String(decoding: scratch, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                guard position + 1 < end else { break }
                let escaped: UInt8
                switch bytes[position + 1] {
                case UInt8(ascii: "\""): escaped = 0x22
                case UInt8(ascii: "\\"): escaped = 0x5C
                case UInt8(ascii: "/"): escaped = 0x2F
                case UInt8(ascii: "b"): escaped = 0x08
                case UInt8(ascii: "f"): escaped = 0x0C
                case UInt8(ascii: "n"): escaped = 0x0A
                case UInt8(ascii: "r"): escaped = 0x0D
                case UInt8(ascii: "t"): escaped = 0x09
                case UInt8(ascii: "u"):
                    let scalar = try parseUnicodeEscape(at: position)
                    appendUTF8(scalar.value)
                    position += scalar.value > 0xFFFF ? 12 : 6
                    continue
                case let other:
                    // A non-ASCII byte after the backslash must still be valid UTF-8 to be quoted in the message.
                    if other >= 0x80 { _ = try utf8SequenceLength(at: position + 1) }
                    throw JSONParseError(offset: position, message: "invalid escape \(describeEscape(at: position))")
                }
                scratch.append(escaped)
                position += 2
                continue
            }
            let runStart = position
            while position < end {
                position = firstSpecialByte(from: position)
                guard position < end else { break }
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { throw controlCharacter(at: position) }
                if byte < 0x80 {
                    position += 1
                } else {
                    position += try utf8SequenceLength(at: position)
                }
            }
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<position]))
        }
        throw JSONParseError(offset: contentStart - 1, message: "unterminated string")
    }

    /// Decodes `\uXXXX` (or a surrogate pair) at `position`; a lone surrogate is an error: UTF-8 cannot hold it.
    private func parseUnicodeEscape(at position: Int) throws(JSONParseError) -> Unicode.Scalar {
        guard let first = hex4(at: position + 2) else {
            throw JSONParseError(offset: position, message: "invalid \\u escape: expected 4 hex digits")
        }
        switch first {
        case 0xD800...0xDBFF:
            guard position + 7 < bytes.count, bytes[position + 6] == UInt8(ascii: "\\"),
                bytes[position + 7] == UInt8(ascii: "u")
            else {
                throw JSONParseError(
                    offset: position,
                    message: "unpaired high surrogate \(describeEscape(at: position)): "
                        + "expected a low surrogate \\u escape")
            }
            guard let second = hex4(at: position + 8) else {
                throw JSONParseError(offset: position + 6, message: "invalid \\u escape: expected 4 hex digits")
            }
            guard (0xDC00...0xDFFF).contains(second) else {
                throw JSONParseError(
                    offset: position,
                    message: "unpaired high surrogate \(describeEscape(at: position)): "
                        + "followed by \(describeEscape(at: position + 6)), not a low surrogate")
            }
            let combined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            return Unicode.Scalar(combined) ?? "\u{FFFD}"  // always valid: U+10000...U+10FFFF
        case 0xDC00...0xDFFF:
            throw JSONParseError(
                offset: position, message: "unpaired low surrogate \(describeEscape(at: position))")
        default:
            return Unicode.Scalar(first) ?? "\u{FFFD}"  // always valid: not a surrogate
        }
    }

    private func hex4(at position: Int) -> UInt32? {
        guard position + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = bytes[position + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func appendUTF8(_ value: UInt32) {
        switch value {
        case 0..<0x80:
            scratch.append(UInt8(truncatingIfNeeded: value))
        case 0x80..<0x800:
            scratch.append(UInt8(truncatingIfNeeded: 0xC0 | value >> 6))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | value & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(truncatingIfNeeded: 0xE0 | value >> 12))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | value & 0x3F))
        default:
            scratch.append(UInt8(truncatingIfNeeded: 0xF0 | value >> 18))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | value >> 12 & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | value >> 6 & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | value & 0x3F))
        }
    }

    // MARK: UTF-8 validation

    /// The length of the well-formed UTF-8 sequence starting with the non-ASCII byte at `position`
    /// (Unicode Table 3-7), or an error naming what is wrong with it.
    private func utf8SequenceLength(at position: Int) throws(JSONParseError) -> Int {
        let lead = bytes[position]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        case 0x80...0xBF:
            throw invalidUTF8(at: position, "unexpected continuation byte \(hexByte(lead))")
        case 0xC0, 0xC1:
            throw invalidUTF8(at: position, "overlong encoding")
        default:
            throw invalidUTF8(at: position, "byte \(hexByte(lead)) never appears in UTF-8")
        }
        guard position + 1 < bytes.count, (0x80...0xBF).contains(bytes[position + 1]) else {
            throw invalidUTF8(at: position, "truncated sequence")
        }
        let second = bytes[position + 1]
        if !secondRange.contains(second) {
            switch lead {
            case 0xE0, 0xF0: throw invalidUTF8(at: position, "overlong encoding")
            case 0xED: throw invalidUTF8(at: position, "encoded surrogate")
            default: throw invalidUTF8(at: position, "code point above U+10FFFF")
            }
        }
        for continuation in 2..<length {
            guard position + continuation < bytes.count, bytes[position + continuation] & 0xC0 == 0x80 else {
                throw invalidUTF8(at: position, "truncated sequence")
            }
        }
        return length
    }

    // MARK: Errors

    private func invalidUTF8(at position: Int, _ detail: String) -> JSONParseError {
        JSONParseError(offset: position, message: "invalid UTF-8: \(detail)")
    }

    private func tooDeep() -> JSONParseError {
        JSONParseError(offset: index, message: "nesting deeper than \(maxDepth) levels")
    }

    private func unexpectedEnd(expected: String) -> JSONParseError {
        JSONParseError(offset: bytes.count, message: "unexpected end of input, expected \(expected)")
    }

    private func controlCharacter(at position: Int) -> JSONParseError {
        JSONParseError(
            offset: position,
            message: "unescaped control character \(hexByte(bytes[position])) in string")
    }

    private func duplicateKey(_ key: String, at offset: Int) -> JSONParseError {
        var quoted: [UInt8] = []
        JSONValue.appendQuoted(key.count > 100 ? String(key.prefix(100)) + "…" : key, to: &quoted)
        return JSONParseError(offset: offset, message: "duplicate key \(String(decoding: quoted, as: UTF8.self))")
    }

    /// Describes the byte at `index`, where something else was expected. Invalid UTF-8 is reported as such.
    private func unexpected(expected: String) -> JSONParseError {
        let byte = bytes[index]
        if byte >= 0x80 {
            do throws(JSONParseError) {
                let length = try utf8SequenceLength(at: index)
                let scalar = String(
                    decoding: UnsafeBufferPointer(rebasing: bytes[index..<index + length]), as: UTF8.self)
                let code = scalar.unicodeScalars.first.map { "U+" + hex($0.value, digits: 4) } ?? ""
                return JSONParseError(offset: index, message: "unexpected character \(code), expected \(expected)")
            } catch {
                return error
            }
        }
        let shown = byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : hexByte(byte)
        return JSONParseError(offset: index, message: "unexpected character \(shown), expected \(expected)")
    }

    /// A value cannot start here; give the most helpful message for common mistakes.
    private func invalidValueStart() -> JSONParseError {
        switch bytes[index] {
        case UInt8(ascii: "+"):
            return JSONParseError(offset: index, message: "invalid number: a leading '+' is not allowed")
        case UInt8(ascii: "."):
            return JSONParseError(offset: index, message: "invalid number: expected a digit before '.'")
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return invalidLiteral()
        default:
            return unexpected(expected: "a JSON value")
        }
    }

    private func invalidLiteral() -> JSONParseError {
        var end = index
        while end < bytes.count && end - index < 32 {
            let byte = bytes[end]
            guard (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") else { break }
            end += 1
        }
        let word = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self)
        let hint = word == "NaN" || word == "Infinity" ? " (JSON has no NaN or Infinity)" : ""
        return JSONParseError(offset: index, message: "invalid literal \"\(word)\"\(hint)")
    }

    /// The escape at `position` as written (`\x`, `\u12AB`), quoted, for error messages.
    private func describeEscape(at position: Int) -> String {
        let next = bytes[position + 1]
        let length: Int
        if next == UInt8(ascii: "u") {
            length = 6
        } else if next >= 0x80 {
            length = 1 + ((try? utf8SequenceLength(at: position + 1)) ?? 1)
        } else {
            length = 2
        }
        let end = min(position + length, bytes.count)
        return "\"" + String(decoding: UnsafeBufferPointer(rebasing: bytes[position..<end]), as: UTF8.self) + "\""
    }

    private func hexByte(_ byte: UInt8) -> String {
        "0x" + hex(UInt32(byte), digits: 2)
    }

    private func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
