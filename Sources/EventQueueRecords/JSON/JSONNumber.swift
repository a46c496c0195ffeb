/// A JSON number kept as its validated decimal text.
///
/// A number is delivered exactly as the writer gave it; one that does not fit a `Double` is refused, not `inf`.
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
