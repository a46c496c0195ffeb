/// A JSON document as EventQueue stores and delivers it.
///
/// Not Foundation's: the writer library stays dependency-free and cheap to load, and a queue must be exact about
/// what it stores (members keep their order, numbers their digits, duplicate keys are an error).
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
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }

    /// The object payload, when this is an object.
    public var objectValue: JSONObject? { if case .object(let value) = self { value } else { nil } }

    /// The array payload, when this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let value) = self { value } else { nil } }

    /// The number payload, when this is a number.
    public var numberValue: JSONNumber? { if case .number(let value) = self { value } else { nil } }
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
