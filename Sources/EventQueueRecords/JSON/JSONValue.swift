/// A JSON document as EventQueue stores and delivers it.
///
/// EventQueue carries its own small JSON model instead of Foundation's because the writer library must stay
/// dependency-free and cheap to load in a short-lived extension process, and because a queue has to be exact
/// about what it stores: object members keep their order, numbers keep their original digits (a 19-digit id
/// survives a round trip), and duplicate keys are an error rather than a silent "last one wins".
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, with the digits it was written with.
    case number(JSONNumber)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, members in written order.
    case object(JSONObject)

    /// The name of this value's JSON type, for error messages ("expected a string, got number").
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// The string payload, when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The object payload, when this is an object.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The array payload, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The number payload, when this is a number.
    public var numberValue: JSONNumber? {
        if case .number(let value) = self { return value }
        return nil
    }
}

/// A JSON number kept as its validated decimal text.
///
/// Keeping the text (rather than a `Double`) means a number is delivered exactly as the writer gave it, and
/// numbers that do not fit a `Double` can be rejected with a clear message instead of turning into `inf`.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number as it appears in JSON, e.g. `42`, `-0.5`, `1e3`.
    public let text: String

    /// Creates a number from JSON number text; `nil` when `text` is not a JSON number or is not finite as a
    /// `Double` (JSON has no `NaN` or infinity, and Braze cannot store them).
    public init?(text: String) {
        guard JSONNumber.isValidLiteral(text), let value = Double(text), value.isFinite else { return nil }
        self.text = text
    }

    /// An integer, written exactly.
    public init(_ value: Int) {
        self.text = String(value)
    }

    /// A 64-bit integer, written exactly (identifiers and millisecond times fit).
    public init(_ value: Int64) {
        self.text = String(value)
    }

    /// Creates a number from a finite `Double`; `nil` for `NaN` and infinities.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        if value == value.rounded(), abs(value) < 1e15 {
            self.text = String(Int64(value))
        } else {
            self.text = "\(value)"
        }
    }

    /// The value as a `Double` (always finite: enforced at construction).
    public var doubleValue: Double { Double(text) ?? 0 }

    /// The value as an integer, when it is one exactly (`3`, `3.0`, `3e2`).
    public var integerValue: Int64? {
        if let exact = Int64(text) { return exact }
        let value = doubleValue
        guard value == value.rounded(), abs(value) < 9.0e15 else { return nil }
        return Int64(value)
    }

    /// The number's JSON text, as stored and sent.
    public var description: String { text }

    /// Checks the JSON number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    static func isValidLiteral(_ text: String) -> Bool {
        var bytes = text.utf8.makeIterator()
        var current = bytes.next()
        func advance() { current = bytes.next() }
        func isDigit(_ byte: UInt8?) -> Bool { byte.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }
        if current == UInt8(ascii: "-") { advance() }
        if current == UInt8(ascii: "0") {
            advance()
        } else if isDigit(current) {
            while isDigit(current) { advance() }
        } else {
            return false
        }
        if current == UInt8(ascii: ".") {
            advance()
            guard isDigit(current) else { return false }
            while isDigit(current) { advance() }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            advance()
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { advance() }
            guard isDigit(current) else { return false }
            while isDigit(current) { advance() }
        }
        return current == nil
    }
}

/// A JSON object whose members keep the order they were written in.
///
/// Order matters for a queue: what a writer enqueued is what the sink receives, byte for byte, so operators
/// can compare the two. Lookups are linear, which is the fastest choice for the small objects Braze takes.
public struct JSONObject: Sendable, Hashable, Sequence {
    /// One `key: value` pair, in the order it was written.
    public struct Member: Sendable, Hashable {
        /// The member's name.
        public var key: String
        /// The member's value.
        public var value: JSONValue

        /// A member; an object built from members needs distinct keys (`JSONObject.init(members:)`).
        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// The members in written order; read-only, so keys stay distinct (set them through the subscript).
    public private(set) var members: [Member]

    /// An empty object, `{}`.
    public init() {
        members = []
    }

    /// Creates an object from members that the caller guarantees have distinct keys.
    public init(members: [Member]) {
        self.members = members
    }

    /// How many members the object has.
    public var count: Int { members.count }
    /// True for `{}`.
    public var isEmpty: Bool { members.isEmpty }
    /// The member names, in written order.
    public var keys: [String] { members.map(\.key) }

    /// Reads a member, or sets one: setting an existing key replaces its value in place, a new key is
    /// appended, and `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.key == key { return member.value }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue {
                    members[index].value = newValue
                } else {
                    members.remove(at: index)
                }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }

    /// Whether a member is named `key` (its value may be `null`).
    public func contains(key: String) -> Bool {
        members.contains { $0.key == key }
    }

    /// The members in written order.
    public func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// `nil` is JSON `null` (as an attribute value: remove the attribute).
    public init(nilLiteral: ()) { self = .null }
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer literal, written exactly.
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    /// A floating-point literal; a non-finite one becomes `null` (JSON has no NaN or infinity). For an exact
    /// decimal such as a price, prefer `JSONNumber(text:)`.
    public init(floatLiteral value: Double) { self = JSONNumber(value).map(JSONValue.number) ?? .null }
    /// A string literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array literal, `["a", 1]`.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object literal, `["song": "Yesterday"]`; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject()
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// An object literal, `["cart_items": 3]`, members in written order; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }
}
