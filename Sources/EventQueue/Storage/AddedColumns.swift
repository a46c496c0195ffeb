/// Whether a table of EventQueue's, as a newer migration left it, differs from this binary's only by added columns
/// that cannot change what this binary's writes do (docs/SCHEMA.md, "Compatibility").
///
/// Why text: SQLite's pragmas tell a column's type, default and `NOT NULL`, but not its `CHECK`, `COLLATE` or
/// `REFERENCES`, and any of these added to `records` makes an older writer's INSERT fail (a `CHECK` of
/// `abs(-9223372036854775807 - 1)` fails every insert with "integer overflow"). `ALTER TABLE ... ADD COLUMN`
/// inserts the new column's text after the last column of the `CREATE TABLE` statement, so the file's statement
/// is EventQueue's with whole column definitions inserted there: anything else (a changed column, a new table
/// constraint, another option) is refused.
enum AddedColumns {
    /// Why `present` is not `expected` plus harmless added columns, or `nil` when it is (the column definitions
    /// are each `NAME TYPE` or `NAME TYPE DEFAULT literal`, the literal of a kind a STRICT column of that type
    /// stores as it is). Both are `CREATE TABLE` statements.
    static func problem(expected: String, present: String) -> String? {
        guard let wanted = Definition(expected), let found = Definition(present) else {
            return "its definition cannot be read"
        }
        let columns = wanted.items.prefix { !isTableConstraint($0) }
        let constraints = wanted.items.dropFirst(columns.count)
        guard found.head == wanted.head, found.tail == wanted.tail, found.items.count > wanted.items.count,
            found.items.starts(with: columns), found.items.suffix(constraints.count).elementsEqual(constraints)
        else { return "its definition differs from EventQueue's by more than columns added after the last one" }
        for item in found.items.dropFirst(columns.count).dropLast(constraints.count) {
            if let problem = columnProblem(item) { return problem }
        }
        return nil
    }

    /// The types of a STRICT table, and the literals each stores without a conversion that could fail.
    private static let literalsByType: [String: Set<Literal>] = [
        "INT": [.null, .integer], "INTEGER": [.null, .integer], "REAL": [.null, .integer, .real],
        "TEXT": [.null, .string], "BLOB": [.null, .blob], "ANY": [.null, .integer, .real, .string, .blob],
    ]

    private enum Literal { case null, integer, real, string, blob }

    private static func columnProblem(_ item: [SQLToken]) -> String? {
        let shown = "adds the column `" + item.map(\.text).joined(separator: " ") + "`"
        let rule = "; only `NAME TYPE` or `NAME TYPE DEFAULT literal` cannot change a write's outcome"
        guard item.count >= 2, !isTableConstraint(item), item[0].kind == .word || item[0].kind == .quotedName,
            item[1].kind == .word,
            let literals = literalsByType[item[1].text.uppercased()]
        else { return shown + rule }
        if item.count == 2 { return nil }
        guard item[2].kind == .word, item[2].text.uppercased() == "DEFAULT", let literal = literal(item.dropFirst(3))
        else { return shown + rule }
        guard literals.contains(literal) else {
            return shown + ": its default is not a value a STRICT \(item[1].text) column stores, so every INSERT "
                + "that leaves it out would fail"
        }
        return nil
    }

    /// The kind of a default's literal, or `nil` for anything else (an expression, `CURRENT_TIME`).
    private static func literal(_ tokens: ArraySlice<SQLToken>) -> Literal? {
        var tokens = tokens
        var sign = ""
        if let first = tokens.first, first.kind == .symbol, first.text == "-" || first.text == "+" {
            sign = first.text == "-" ? "-" : ""
            tokens = tokens.dropFirst()
            guard tokens.first?.kind == .number else { return nil }
        }
        guard tokens.count == 1, let token = tokens.first else { return nil }
        switch token.kind {
        case .string: return .string
        case .blob: return .blob
        case .word: return token.text.uppercased() == "NULL" ? .null : nil
        case .number:
            if Int64(sign + token.text) != nil { return .integer }
            let isDecimal = token.text.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e")
                    || $0 == UInt8(ascii: "E") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-")
            }
            return isDecimal ? .real : nil
        case .quotedName, .symbol: return nil
        }
    }

    private static func isTableConstraint(_ item: [SQLToken]) -> Bool {
        guard let first = item.first, first.kind == .word else { return false }
        return ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"].contains(first.text.uppercased())
    }

    /// A `CREATE TABLE` statement as its head (to the opening parenthesis), the column definitions and table
    /// constraints between its outer parentheses (split at the top-level commas), and its tail (the closing
    /// parenthesis and the table options).
    private struct Definition {
        var head: [SQLToken]
        var items: [[SQLToken]]
        var tail: [SQLToken]

        init?(_ sql: String) {
            guard let tokens = SQLToken.tokens(sql),
                let open = tokens.firstIndex(where: { $0.kind == .symbol && $0.text == "(" })
            else { return nil }
            head = Array(tokens[...open])
            items = []
            var item: [SQLToken] = []
            var depth = 1
            var index = open + 1
            while index < tokens.count {
                let token = tokens[index]
                if token.kind == .symbol, token.text == "(" { depth += 1 }
                if token.kind == .symbol, token.text == ")" { depth -= 1 }
                if depth == 0 { break }
                if depth == 1, token.kind == .symbol, token.text == "," {
                    items.append(item)
                    item = []
                } else {
                    item.append(token)
                }
                index += 1
            }
            guard depth == 0, !item.isEmpty, !items.contains(where: \.isEmpty) else { return nil }
            items.append(item)
            tail = Array(tokens[index...])
        }
    }
}

/// One token of SQL text, split as SQLite's tokenizer does for what a table definition holds: white space and
/// comments are dropped, quoted names and literals are one token each.
struct SQLToken: Hashable {
    enum Kind: Hashable {
        /// A keyword or a bare name.
        case word
        /// `"name"`, `[name]` or `` `name` ``.
        case quotedName
        /// `'text'`.
        case string
        /// `X'0A'`.
        case blob
        case number
        /// Any other single character: `(`, `,`, `-`.
        case symbol
    }

    var kind: Kind
    var text: String

    /// The tokens of `sql`, or `nil` when a quote is not closed.
    static func tokens(_ sql: String) -> [SQLToken]? {
        let bytes = Array(sql.utf8)
        var tokens: [SQLToken] = []
        var index = 0
        func text(_ start: Int) -> String { String(decoding: bytes[start..<index], as: UTF8.self) }
        func isWordByte(_ byte: UInt8) -> Bool {
            byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
                || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
                || (byte >= 0x30 && byte <= 0x39)
        }
        /// Moves past the quote that closes the one at `index` (a doubled closing quote is part of the text).
        func skipQuoted(closing: UInt8, doubled: Bool) -> Bool {
            index += 1
            while index < bytes.count {
                if bytes[index] == closing {
                    if doubled, index + 1 < bytes.count, bytes[index + 1] == closing {
                        index += 2
                        continue
                    }
                    index += 1
                    return true
                }
                index += 1
            }
            return false
        }
        while index < bytes.count {
            let byte = bytes[index]
            let next = index + 1 < bytes.count ? bytes[index + 1] : 0
            let start = index
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0C, 0x0D:
                index += 1
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                index += 2
                while index + 1 < bytes.count,
                    !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/"))
                {
                    index += 1
                }
                index = min(index + 2, bytes.count)
            case UInt8(ascii: "'"):
                guard skipQuoted(closing: byte, doubled: true) else { return nil }
                tokens.append(SQLToken(kind: .string, text: text(start)))
            case UInt8(ascii: "\""), UInt8(ascii: "`"):
                guard skipQuoted(closing: byte, doubled: true) else { return nil }
                tokens.append(SQLToken(kind: .quotedName, text: text(start)))
            case UInt8(ascii: "["):
                guard skipQuoted(closing: UInt8(ascii: "]"), doubled: false) else { return nil }
                tokens.append(SQLToken(kind: .quotedName, text: text(start)))
            case UInt8(ascii: "x") where next == UInt8(ascii: "'"), UInt8(ascii: "X") where next == UInt8(ascii: "'"):
                index += 1
                guard skipQuoted(closing: UInt8(ascii: "'"), doubled: false) else { return nil }
                tokens.append(SQLToken(kind: .blob, text: text(start)))
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."):
                guard byte != UInt8(ascii: ".") || (next >= 0x30 && next <= 0x39) else {
                    index += 1
                    tokens.append(SQLToken(kind: .symbol, text: "."))
                    continue
                }
                while index < bytes.count {
                    let current = bytes[index]
                    let exponentSign =
                        (current == UInt8(ascii: "+") || current == UInt8(ascii: "-"))
                        && (bytes[index - 1] | 0x20 == UInt8(ascii: "e"))
                    guard isWordByte(current) || current == UInt8(ascii: ".") || exponentSign else { break }
                    index += 1
                }
                tokens.append(SQLToken(kind: .number, text: text(start)))
            default:
                guard isWordByte(byte) else {
                    index += 1
                    tokens.append(SQLToken(kind: .symbol, text: text(start)))
                    continue
                }
                while index < bytes.count, isWordByte(bytes[index]) { index += 1 }
                tokens.append(SQLToken(kind: .word, text: text(start)))
            }
        }
        return tokens
    }
}
