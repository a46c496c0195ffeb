/// A JSON document as EventQueue stores and delivers it.
///
/// EventQueue carries its own small JSON model instead of Foundation's because the writer library must stay
/// dependency-free and cheap to load in a short-lived extension process, and because a queue has to be exact
/// about what it stores: object members keep their order, numbers keep their original digits (a 19-digit id
/// survives a round trip), and duplicate keys are an error rather than a silent "last one wins".
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
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

    public init(_ value: Int) {
        self.text = String(value)
    }

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
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    public private(set) var members: [Member]

    public init() {
        members = []
    }

    /// Creates an object from members that the caller guarantees have distinct keys.
    public init(members: [Member]) {
        self.members = members
    }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
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

    public func contains(key: String) -> Bool {
        members.contains { $0.key == key }
    }

    public func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(floatLiteral value: Double) { self = JSONNumber(value).map(JSONValue.number) ?? .null }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = JSONObject()
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }
}
