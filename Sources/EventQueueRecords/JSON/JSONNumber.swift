/// A JSON number kept as its validated decimal text.
///
/// A number is delivered exactly as the writer gave it; one that does not fit a `Double` is refused, not `inf`.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number as it appears in JSON, e.g. `42`, `-0.5`, `1e3`.
    public let text: String

    /// Creates a number from JSON number text; `nil` when `text` is not a JSON number or is not finite as a
    /// `Double` (JSON has no `NaN` or infinity, and Braze cannot store them).
    public init?(text: String) {
        // The parser's number rule (grammar, and finite as a `Double`), with nothing around the number.
        guard case .number(let number)? = try? JSONValue.parse(text), number.text == text else { return nil }
        self = number
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
        text = if value == value.rounded(), abs(value) < 1e15 { String(Int64(value)) } else { "\(value)" }
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
}
