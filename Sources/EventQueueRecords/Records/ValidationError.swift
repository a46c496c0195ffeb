/// Why a record was refused at enqueue.
///
/// A writer usually cannot ask anyone what went wrong, so the error names the exact field (a dotted path such
/// as `properties.song`) and the rule it broke; for a batch it also names the record's position, so the one
/// bad line in a 10,000-line NDJSON file can be found and fixed. Nothing is written when this is thrown.
public struct ValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The field that broke a rule, as a dotted path into the Braze object (`name`, `properties.price`,
    /// `user_alias.alias_name`); `type` for the record kind and `record` for the record as a whole.
    public var field: String
    /// The rule, phrased so that it reads after the field name: "must be 1 to 255 characters".
    public var rule: String
    /// The record's 0-based index in a batch, when it came from one.
    public var index: Int?
    /// The 1-based line number, when the record came from NDJSON.
    public var line: Int?

    /// A refusal of `field` for breaking `rule`; `index` or `line` place it in a batch or an NDJSON input.
    public init(field: String, rule: String, index: Int? = nil, line: Int? = nil) {
        self.field = field
        self.rule = rule
        self.index = index
        self.line = line
    }

    /// "line 3: properties.song must be 1 to 255 characters": the place, the field and the rule, in one line.
    public var description: String {
        var prefix = ""
        if let line {
            prefix = "line \(line): "
        } else if let index {
            prefix = "record \(index): "
        }
        return "\(prefix)invalid record: \(Self.printable(field)) \(Self.printable(rule))"
    }

    /// `text` with control characters (C0, DEL, C1) written as `\u{1B}`: a field path is copied from the input (an
    /// attribute name may be `"\u001b[2J"`), and the description is printed to terminals and logs, where a raw
    /// escape sequence or NUL would rewrite or truncate what the operator sees.
    package static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: RecordValidator.isControl) else { return text }
        return text.unicodeScalars.map { RecordValidator.isControl($0) ? RecordValidator.escaped($0) : String($0) }
            .joined()
    }
}
