import EventQueue
import FoundationEssentials

/// A property-list value of any type, read and written through FoundationEssentials' `PropertyListDecoder` and
/// `PropertyListEncoder` (XML and binary). FoundationEssentials is loaded anyway (ArgumentParser links it);
/// Foundation's `PropertyListSerialization` would map Foundation and ICU into every `queuectl` process, the
/// writers' `queuectl enqueue` included (docs/PERFORMANCE.md, section 2).
///
/// A whole-number `<real>` in an XML list reads as an integer (the decoder cannot tell `5.0` from `5` there); as
/// JSON both are `5`.
indirect enum PropertyListValue: Codable, Sendable {
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    case string(String)
    case date(Date)
    case data([UInt8])
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    /// The type's name, for messages ("found an array").
    var typeName: String {
        switch self {
        case .bool: return "a boolean"
        case .integer, .real: return "a number"
        case .string: return "a string"
        case .date: return "a date"
        case .data: return "data"
        case .array: return "an array"
        case .dictionary: return "a dictionary"
        }
    }

    /// Parses XML or binary property-list bytes, and says which format they were in.
    static func parse(_ bytes: [UInt8]) throws -> (value: PropertyListValue, binary: Bool) {
        var format = PropertyListDecoder.PropertyListFormat.xml
        let value = try PropertyListDecoder().decode(PropertyListValue.self, from: Data(bytes), format: &format)
        return (value, format == .binary)
    }

    func serialized(binary: Bool) throws -> [UInt8] {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = binary ? .binary : .xml
        return [UInt8](try encoder.encode(self))
    }

    /// Decoding Base64 text (a `Data` item kept as text in a JSON store).
    static func base64Decoded(_ text: String) -> [UInt8]? {
        Data(base64Encoded: text).map { [UInt8]($0) }
    }

    /// The value as JSON: dictionaries with sorted keys, dates as ISO 8601 text, binary data as base64 text (its
    /// path recorded in `binary`).
    func json(path: String, binary: inout [String]) -> JSONValue {
        switch self {
        case .bool(let flag): return .bool(flag)
        case .integer(let number): return .number(JSONNumber(number))
        case .real(let number): return JSONNumber(number).map(JSONValue.number) ?? .null
        case .string(let text): return .string(text)
        case .date(let date):
            let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
            return .string(ISO8601.format(unixMilliseconds: milliseconds))
        case .data(let bytes):
            binary.append(path)
            return .string(Data(bytes).base64EncodedString())
        case .array(let items):
            return .array(items.enumerated().map { $1.json(path: "\(path)[\($0)]", binary: &binary) })
        case .dictionary(let members):
            var object = JSONObject()
            for key in members.keys.sorted() {
                if let element = members[key] { object[key] = element.json(path: "\(path).\(key)", binary: &binary) }
            }
            return .object(object)
        }
    }

    init(from decoder: any Decoder) throws {
        if var container = try? decoder.unkeyedContainer() {
            var items: [PropertyListValue] = []
            while !container.isAtEnd { items.append(try container.decode(PropertyListValue.self)) }
            self = .array(items)
            return
        }
        if let container = try? decoder.container(keyedBy: Key.self) {
            var members: [String: PropertyListValue] = [:]
            for key in container.allKeys {
                members[key.stringValue] = try container.decode(PropertyListValue.self, forKey: key)
            }
            self = .dictionary(members)
            return
        }
        let container = try decoder.singleValueContainer()
        // Most specific first: a boolean is not an integer, an integer not a real, a date and data not text.
        if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .real(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Date.self) {
            self = .date(value)
        } else if let value = try? container.decode(Data.self) {
            self = .data([UInt8](value))
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a value of an unknown type")
        }
    }

    func encode(to encoder: any Encoder) throws {
        let single: any Encodable
        switch self {
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
            return
        case .dictionary(let members):
            var container = encoder.container(keyedBy: Key.self)
            for (key, value) in members { try container.encode(value, forKey: Key(stringValue: key)) }
            return
        case .bool(let value): single = value
        case .integer(let value): single = value
        case .real(let value): single = value
        case .string(let value): single = value
        case .date(let value): single = value
        case .data(let value): single = Data(value)
        }
        var container = encoder.singleValueContainer()
        try container.encode(single)
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
