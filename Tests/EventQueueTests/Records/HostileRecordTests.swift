import Glibc
import Testing

@testable import EventQueue

/// One hostile NDJSON line and exactly what `queuectl enqueue --ndjson` must do with it.
struct HostileLine: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let expected: NDJSONLineOutcome

    init(_ name: String, _ text: String, _ expected: NDJSONLineOutcome) {
        self.init(name, bytes: Array(text.utf8), expected)
    }

    init(_ name: String, bytes: [UInt8], _ expected: NDJSONLineOutcome) {
        self.name = name
        self.bytes = bytes
        self.expected = expected
    }

    var testDescription: String { name }
}

/// The time `HostileInputOracle` gives records without one.
private let defaultTime = #""time":"2023-11-14T22:13:20.000Z""#

private func event(_ payload: String) -> NDJSONLineOutcome {
    .accepted(kind: .event, payload: payload, user: .externalID("u1"), idempotencyKey: nil)
}

private func purchase(_ payload: String) -> NDJSONLineOutcome {
    .accepted(kind: .purchase, payload: payload, user: .externalID("u1"), idempotencyKey: nil)
}

/// Rejected as invalid JSON, at `offset`.
private func notJSON(at offset: Int, _ message: String) -> NDJSONLineOutcome {
    .rejected(
        field: "record", message: "invalid record: record is not valid JSON: invalid JSON at byte \(offset): \(message)"
    )
}

private func rejected(_ field: String, _ rule: String) -> NDJSONLineOutcome {
    .rejected(field: field, message: "invalid record: \(rule)")
}

private let notUTF8 = NDJSONLineOutcome.rejected(field: "record", message: "invalid record: record is not valid UTF-8")

/// The outcome of one line through the oracle (which also checks every invariant, whatever the outcome).
private func outcome(_ bytes: [UInt8]) throws -> NDJSONLineOutcome {
    try HostileInputOracle.check(line: bytes)
}

/// The byte parser's error for `bytes`, or nil when they parse.
private func parseError(_ bytes: [UInt8]) -> JSONParseError? {
    do {
        _ = try JSONValue.parse(utf8: bytes)
        return nil
    } catch {
        return error
    }
}

/// Each hostile input class of docs/RELIABILITY.md ("Hostile input") with its exact outcome. `scripts/fuzz` explores
/// the same path (HostileInputOracle) with libFuzzer; these run on every `swift test`, without the fuzzer.
@Suite struct HostileRecordTests {
    // MARK: Malformed UTF-8

    /// queuectl refuses a line that is not UTF-8 before parsing it; the byte parser names the exact problem and
    /// byte, for writers that hand it raw bytes.
    @Test(
        arguments: [
            ("overlong /", [0xC0, 0xAF], "invalid UTF-8: overlong encoding"),
            ("overlong 3-byte", [0xE0, 0x80, 0xAF], "invalid UTF-8: overlong encoding"),
            ("overlong 4-byte", [0xF0, 0x80, 0x80, 0xAF], "invalid UTF-8: overlong encoding"),
            ("encoded surrogate", [0xED, 0xA0, 0x80], "invalid UTF-8: encoded surrogate"),
            ("truncated 3-byte", [0xE2, 0x82], "invalid UTF-8: truncated sequence"),
            ("truncated 4-byte", [0xF0, 0x9F, 0x98], "invalid UTF-8: truncated sequence"),
            ("lone continuation", [0x80], "invalid UTF-8: unexpected continuation byte 0x80"),
            ("0xFF", [0xFF], "invalid UTF-8: byte 0xFF never appears in UTF-8"),
            ("above U+10FFFF", [0xF4, 0x90, 0x80, 0x80], "invalid UTF-8: code point above U+10FFFF"),
        ] as [(String, [UInt8], String)])
    func malformedUTF8(name: String, sequence: [UInt8], message: String) throws {
        let prefix = Array(#"{"type":"event","external_id":"u1","name":"n"#.utf8)
        let line = prefix + sequence + Array(#""}"#.utf8)
        #expect(try outcome(line) == notUTF8, "\(name)")
        #expect(parseError(line) == JSONParseError(offset: prefix.count, message: message), "\(name)")
    }

    // MARK: Huge numbers

    /// Numbers keep their text: a finite one is stored exactly as written, one beyond `Double` is refused.
    @Test(arguments: [
        HostileLine(
            "1e400 is out of range",
            #"{"type":"purchase","external_id":"u1","product_id":"p","currency":"USD","price":1e400}"#,
            notJSON(at: 80, "number out of range")),
        HostileLine(
            "exponent beyond Int is out of range",
            #"{"type":"event","external_id":"u1","name":"n","properties":{"x":1e1000000000000}}"#,
            notJSON(at: 64, "number out of range")),
        HostileLine(
            "-0 is kept",
            #"{"type":"purchase","external_id":"u1","product_id":"p","currency":"USD","price":-0}"#,
            purchase(
                #"{"external_id":"u1","product_id":"p","currency":"USD","price":-0,"# + defaultTime + #","quantity":1}"#
            )),
        HostileLine(
            "a 100-digit integer is kept digit for digit",
            #"{"type":"event","external_id":"u1","name":"n","properties":{"big":"# + String(repeating: "1", count: 100)
                + "}}",
            event(
                #"{"external_id":"u1","name":"n","properties":{"big":"# + String(repeating: "1", count: 100) + "},"
                    + defaultTime + "}")),
        HostileLine(
            "1e-400 is kept (it underflows to 0 as a Double)",
            #"{"type":"event","external_id":"u1","name":"n","properties":{"tiny":1e-400}}"#,
            event(#"{"external_id":"u1","name":"n","properties":{"tiny":1e-400},"# + defaultTime + "}")),
        HostileLine(
            "a 100-digit quantity is refused, naming the field",
            #"{"type":"purchase","external_id":"u1","product_id":"p","currency":"USD","price":1,"quantity":"#
                + String(repeating: "1", count: 100) + "}",
            rejected(
                "quantity",
                "quantity must be an integer from 1 to 100 (got \(String(repeating: "1", count: 100)))")),
        HostileLine(
            "NaN is refused",
            #"{"type":"event","external_id":"u1","name":"n","properties":{"x":NaN}}"#,
            notJSON(at: 64, #"invalid literal "NaN" (JSON has no NaN or Infinity)"#)),
    ])
    func hugeNumbers(_ line: HostileLine) throws {
        #expect(try outcome(line.bytes) == line.expected)
    }

    // MARK: Deep nesting

    /// The record is depth 1 and `properties` depth 2, so 62 nested arrays reach the limit of 64 and 63 pass it.
    @Test func nestingUpToTheLimitIsAcceptedAndOneMoreIsRefused() throws {
        let prefix = #"{"type":"event","external_id":"u1","name":"n","properties":{"x":"#
        func line(_ depth: Int) -> [UInt8] {
            Array((prefix + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}}").utf8)
        }
        let inner = String(repeating: "[", count: 62) + String(repeating: "]", count: 62)
        #expect(
            try outcome(line(62))
                == event(#"{"external_id":"u1","name":"n","properties":{"x":"# + inner + "}," + defaultTime + "}"))
        #expect(try outcome(line(63)) == notJSON(at: prefix.utf8.count + 62, "nesting deeper than 64 levels"))
    }

    /// 100,000 `[` are refused at the 63rd, without recursion and without reading the rest.
    @Test func aHundredThousandOpeningBracketsAreRefused() throws {
        let prefix = #"{"type":"event","external_id":"u1","name":"n","properties":{"x":"#
        let line = Array((prefix + String(repeating: "[", count: 100_000) + "}}").utf8)
        #expect(try outcome(line) == notJSON(at: prefix.utf8.count + 62, "nesting deeper than 64 levels"))
    }

    // MARK: 10 MB lines

    /// A line over 256 KiB is refused by its length before it is parsed, so a 10 MB line costs one length check.
    @Test func aTenMegabyteLineIsRefusedByItsSize() throws {
        let prefix = #"{"type":"event","external_id":"u1","name":"n","properties":{"s":""#
        let text = prefix + String(repeating: "a", count: 10 * 1024 * 1024) + #""}}"#
        let count = text.utf8.count
        #expect(throws: ValidationError(field: "record", rule: "must be at most 262144 bytes (got \(count))")) {
            try Record(jsonLine: text)
        }
        let brackets = String(repeating: "[", count: 10 * 1024 * 1024)
        #expect(throws: ValidationError(field: "record", rule: "must be at most 262144 bytes (got 10485760)")) {
            try Record(jsonLine: brackets)
        }
    }

    /// Just over the limit is refused; a record whose parts are each valid but whose payload would pass 256 KiB is
    /// refused by its serialized size.
    @Test func theSizeLimitHoldsAtItsBoundary() throws {
        let limit = RecordEncoder.maximumPayloadBytes
        let prefix = #"{"type":"attribute","external_id":"u1","a":""#
        let exact = prefix + String(repeating: "a", count: limit - prefix.utf8.count - 2) + #""}"#
        #expect(exact.utf8.count == limit)
        // At the limit the line is parsed (and refused for its 255-character rule, not its size).
        #expect(
            try outcome(Array(exact.utf8))
                == rejected("a", "a must be at most 255 characters (got \(limit - prefix.utf8.count - 2))"))
        let over = prefix + String(repeating: "a", count: limit - prefix.utf8.count - 1) + #""}"#
        #expect(
            try outcome(Array(over.utf8))
                == rejected("record", "record must be at most \(limit) bytes (got \(limit + 1))"))
        // 1,100 attributes of 240 characters: every one is valid, the whole (about 280 KB) is not.
        var attributes = #"{"type":"attribute","external_id":"u1""#
        for index in 0..<1100 { attributes += #","a\#(index)":""# + String(repeating: "v", count: 240) + #"""# }
        attributes += "}"
        let result = try outcome(Array(attributes.utf8))
        #expect(result.rejectedField == "record")
        #expect(result.message?.hasPrefix("invalid record: record must be at most \(limit) bytes") == true)
    }

    // MARK: NUL bytes

    @Test(arguments: [
        HostileLine(
            "a raw NUL in a string is an unescaped control character",
            bytes: Array(#"{"type":"event","external_id":"u1","name":"a"#.utf8) + [0] + Array(#"b"}"#.utf8),
            notJSON(at: 44, "unescaped control character 0x00 in string")),
        HostileLine(
            "a raw NUL after the object is trailing garbage",
            bytes: Array(#"{"type":"event","external_id":"u1","name":"n"}"#.utf8) + [0],
            notJSON(at: 46, "unexpected character 0x00, expected end of input after the JSON value")),
        HostileLine(
            "an escaped NUL in a value is kept (escaped again when stored)",
            #"{"type":"event","external_id":"u1","name":"a\u0000b"}"#,
            event(#"{"external_id":"u1","name":"a\u0000b","# + defaultTime + "}")),
        HostileLine(
            "an identifier with NUL is refused",
            #"{"type":"event","external_id":"u\u0000","name":"n"}"#,
            rejected("external_id", "external_id must not contain control characters (found U+0000)")),
        HostileLine(
            "an attribute named external_id plus NUL is refused (no second external_id for C-string readers)",
            #"{"type":"attribute","external_id":"u1","external_id\u0000":"u2"}"#,
            .rejected(
                field: "external_id\u{0}",
                message: #"invalid record: external_id\u{0} is not a valid attribute name: it must not contain "#
                    + "control characters (found U+0000)")),
        HostileLine(
            "a property name with NUL is refused",
            #"{"type":"event","external_id":"u1","name":"n","properties":{"k\u0000":1}}"#,
            .rejected(
                field: "properties.k\u{0}",
                message: #"invalid record: properties.k\u{0} is not a valid property name: it must not contain "#
                    + "control characters (found U+0000)")),
        HostileLine(
            "a nested key with NUL is refused",
            #"{"type":"event","external_id":"u1","name":"n","properties":{"o":{"k\u0000":1}}}"#,
            .rejected(
                field: "properties.o.k\u{0}",
                message: #"invalid record: properties.o.k\u{0} is not a valid key: it must not contain "#
                    + "control characters (found U+0000)")),
        HostileLine(
            "an idempotency key with NUL is refused",
            #"{"type":"event","external_id":"u1","name":"n","idempotency_key":"\u0000k"}"#,
            .rejected(
                field: "idempotency_key",
                message: #"invalid idempotency key "\u{0}k": must be 1 to 255 bytes, without NUL characters"#)),
    ])
    func nulBytes(_ line: HostileLine) throws {
        #expect(try outcome(line.bytes) == line.expected)
    }

    /// SQLite's length() stops at NUL, so without the check a NUL key would fail the column's CHECK with an SQLite
    /// error; it must be the typed error, and nothing may be written.
    @Test func anIdempotencyKeyWithNULIsRefusedBeforeSQLite() throws {
        let directory = Scratch()
        let writer = try QueueWriter(path: directory.file("q.db"))
        defer { writer.close() }
        #expect(throws: QueueError.invalidIdempotencyKey("\u{0}k")) {
            try writer.enqueue(Record.event("n", user: .externalID("u1"), idempotencyKey: "\u{0}k"))
        }
        #expect(try RawDatabase(path: directory.file("q.db")).scalar("SELECT count(*) FROM records") == "0")
    }

    // MARK: Duplicate keys

    /// The rule: a duplicate key anywhere refuses the whole line (never first- or last-wins), keys compared as
    /// Swift strings (after escapes are decoded, canonically equivalent spellings are equal).
    @Test(arguments: [
        HostileLine(
            "a second external_id",
            #"{"type":"event","external_id":"u1","external_id":"u2","name":"n"}"#,
            notJSON(at: 35, #"duplicate key "external_id""#)),
        HostileLine(
            "a second external_id spelled with an escape",
            #"{"type":"event","external_id":"u1","external\u005fid":"u2","name":"n"}"#,
            notJSON(at: 35, #"duplicate key "external_id""#)),
        HostileLine(
            "a second type",
            #"{"type":"event","type":"purchase","external_id":"u1","name":"n"}"#,
            notJSON(at: 16, #"duplicate key "type""#)),
        HostileLine(
            "a second email in attributes",
            #"{"type":"attribute","email":"a@b.co","email":"c@d.co","x":1}"#,
            notJSON(at: 37, #"duplicate key "email""#)),
        HostileLine(
            "canonically equivalent property names (é precomposed and decomposed)",
            "{\"type\":\"event\",\"external_id\":\"u1\",\"name\":\"n\",\"properties\":{\"\u{E9}\":1,\"e\u{301}\":2}}",
            notJSON(at: 67, "duplicate key \"e\u{301}\"")),
        HostileLine(
            "the Kelvin sign is canonically K",
            "{\"type\":\"event\",\"external_id\":\"u1\",\"name\":\"n\",\"properties\":{\"\u{212A}\":1,\"K\":2}}",
            notJSON(at: 68, #"duplicate key "K""#)),
        HostileLine(
            "two different identifiers",
            #"{"type":"event","external_id":"u1","braze_id":"b","name":"n"}"#,
            rejected("record", "record names more than one user (external_id and braze_id); give exactly one")),
        HostileLine(
            "two identifiers in attributes",
            #"{"type":"attribute","external_id":"u1","user_alias":{"alias_name":"a","alias_label":"b"},"x":1}"#,
            rejected("record", "record names more than one user (external_id and user_alias); give exactly one")),
    ])
    func duplicateKeys(_ line: HostileLine) throws {
        #expect(try outcome(line.bytes) == line.expected)
    }

    /// A line with a second identity never becomes a record, and the user_key SQLite derives for the records
    /// that do is the identity the validator saw (external_id before email in attributes).
    @Test func aDuplicateIdentityCannotReachTheQueue() throws {
        let directory = Scratch()
        let writer = try QueueWriter(path: directory.file("q.db"))
        defer { writer.close() }
        let good = try Record(jsonLine: #"{"type":"event","external_id":"u1","name":"n"}"#)
        #expect(
            throws: ValidationError(
                field: "record", rule: #"is not valid JSON: invalid JSON at byte 35: duplicate key "external_id""#)
        ) {
            try Record(jsonLine: #"{"type":"event","external_id":"u1","external_id":"u2","name":"n"}"#)
        }
        let attribute = try Record(jsonLine: #"{"type":"attribute","email":"a@b.co","phone":"+1 555 0100"}"#)
        try writer.enqueue(contentsOf: [good, attribute])
        let keys = try RawDatabase(path: directory.file("q.db")).rows("SELECT user_key FROM records ORDER BY id")
        #expect(keys == [["external_id:u1"], ["email:a@b.co"]])
    }

    // MARK: Surrogates in escapes

    @Test(arguments: [
        HostileLine(
            "a lone high surrogate",
            #"{"type":"event","external_id":"u1","name":"\ud800"}"#,
            notJSON(at: 43, #"unpaired high surrogate "\ud800": expected a low surrogate \u escape"#)),
        HostileLine(
            "a lone low surrogate",
            #"{"type":"event","external_id":"u1","name":"\udc00"}"#,
            notJSON(at: 43, #"unpaired low surrogate "\udc00""#)),
        HostileLine(
            "a high surrogate before a non-surrogate",
            #"{"type":"event","external_id":"u1","name":"\ud83d\u0041"}"#,
            notJSON(at: 43, #"unpaired high surrogate "\ud83d": followed by "\u0041", not a low surrogate"#)),
        HostileLine(
            "a valid pair is stored as UTF-8",
            #"{"type":"event","external_id":"u1","name":"\ud83d\ude00"}"#,
            event(#"{"external_id":"u1","name":"😀","# + defaultTime + "}")),
    ])
    func surrogateEscapes(_ line: HostileLine) throws {
        #expect(try outcome(line.bytes) == line.expected)
    }

    // MARK: BOM and trailing garbage

    @Test(arguments: [
        HostileLine(
            "a byte order mark",
            bytes: [0xEF, 0xBB, 0xBF] + Array(#"{"type":"event","external_id":"u1","name":"n"}"#.utf8),
            notJSON(at: 0, "byte order mark (U+FEFF) is not allowed")),
        HostileLine(
            "a word after the object",
            #"{"type":"event","external_id":"u1","name":"n"} x"#,
            notJSON(at: 47, "unexpected character 'x', expected end of input after the JSON value")),
        HostileLine(
            "two objects on one line",
            #"{"type":"event","external_id":"u1","name":"n"}{"type":"event","external_id":"u1","name":"n"}"#,
            notJSON(at: 46, "unexpected character '{', expected end of input after the JSON value")),
        HostileLine(
            "a CR before the newline is not garbage",
            "{\"type\":\"event\",\"external_id\":\"u1\",\"name\":\"n\"}\r",
            event(#"{"external_id":"u1","name":"n","# + defaultTime + "}")),
        HostileLine(
            "trailing spaces are not garbage",
            #"{"type":"event","external_id":"u1","name":"n"}   "#,
            event(#"{"external_id":"u1","name":"n","# + defaultTime + "}")),
        HostileLine("a line of spaces and tabs is skipped", " \t ", .blank),
    ])
    func bomAndTrailingGarbage(_ line: HostileLine) throws {
        #expect(try outcome(line.bytes) == line.expected)
    }

    // MARK: Messages

    /// Field names come from the input; the description escapes control characters so a key cannot write a
    /// terminal escape sequence (or a NUL) into an operator's terminal or a log.
    @Test func controlCharactersInKeysAreEscapedInMessages() throws {
        let line = #"{"type":"event","external_id":"u1","name":"n","\u001b[2J\u0085":1}"#
        let expected = NDJSONLineOutcome.rejected(
            field: "\u{1B}[2J\u{85}",
            message: #"invalid record: \u{1B}[2J\u{85} is not a field of a Braze event object"#)
        #expect(try outcome(Array(line.utf8)) == expected)
        // The parser quotes a bad escape as written: a backslash before a raw control byte.
        let escape = Array(#"{"type":"event","external_id":"u1","name":"a\"#.utf8) + [0x1B] + Array(#""}"#.utf8)
        #expect(try outcome(escape) == notJSON(at: 44, #"invalid escape "\\u{1B}""#))
        let tooLong = String(repeating: "\u{7}", count: 300)
        #expect(
            QueueError.invalidIdempotencyKey(tooLong).description
                == "invalid idempotency key \"" + String(repeating: #"\u{7}"#, count: 40)
                + #"": must be 1 to 255 bytes, without NUL characters"#)
    }

    // MARK: Corpus and mutations

    /// Every committed seed and regression input of the fuzzer (Fuzz/corpus) still keeps the invariants.
    @Test func theFuzzCorpusKeepsTheInvariants() throws {
        let directory = String(#filePath.split(separator: "/").dropLast(4).joined(separator: "/"))
        let corpus = "/" + directory + "/Fuzz/corpus"
        let files = try listFiles(corpus)
        #expect(files.count >= 10, "Fuzz/corpus has \(files.count) files")
        var outcomes = 0
        for file in files {
            outcomes += try HostileInputOracle.check(document: readFile(corpus + "/" + file)).count
        }
        #expect(outcomes >= files.count)
    }

    /// A seeded stand-in for the fuzzer on every CI run: the seeds mutated with the dictionary's hostile pieces
    /// (20,000 inputs; 200,000 with EVENTQUEUE_LONG_TESTS=1). Any broken invariant throws.
    @Test func seededMutationsKeepTheInvariants() throws {
        let long = getenv("EVENTQUEUE_LONG_TESTS").map { String(cString: $0) } == "1"
        let count = long ? 200_000 : 20_000
        let seeds: [[UInt8]] = [
            #"{"type":"event","external_id":"u1","name":"n","properties":{"a":[1,-0,1e-400],"b":{"c":"\u00e9"}}}"#,
            #"{"type":"purchase","braze_id":"b","product_id":"p","currency":"USD","price":9.99,"quantity":2}"#,
            #"{"type":"attribute","email":"a@b.co","phone":"+1 555 0100","x":{"add":["a"]},"y":{"inc":1}}"#,
            #"{"type":"event","user_alias":{"alias_name":"a","alias_label":"b"},"name":"\ud83d\ude00","time":"2024-05-01T12:00:00Z"}"#,
        ].map { Array($0.utf8) }
        let pieces: [[UInt8]] =
            [
                [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0x80], [0xFF], [0xEF, 0xBB, 0xBF], [0], [0x1B], [0x0D],
                [0x0A], [0xC2, 0x85], Array("e\u{301}".utf8), Array("\u{212A}".utf8),
            ]
            + [
                "1e400", "-0", "1e-400", String(repeating: "9", count: 100), "NaN", #"\ud800"#, #"\udc00"#,
                #"\u0000"#, #"\u001b"#, "[[[[[[[[[[[[[[[[", "]]]]", #""external_id":"u2","#, #""type":"event","#,
                #""email":"x@y.z","#, #""external\u005fid":"#, ",", ":", "{", "}", #"""#, #"\"#, "null",
            ].map { Array($0.utf8) }
        var random = SplitMix64(seed: 0xF022)
        var accepted = 0
        for _ in 0..<count {
            var bytes = random.pick(seeds)
            for _ in 0..<(1 + random.below(4)) {
                let position = random.below(bytes.count + 1)
                switch random.below(4) {
                case 0: bytes.insert(contentsOf: random.pick(pieces), at: position)
                case 1 where position < bytes.count: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                case 2 where position < bytes.count:
                    bytes.removeSubrange(position..<min(bytes.count, position + 1 + random.below(8)))
                default: bytes.insert(contentsOf: random.pick(pieces), at: random.below(bytes.count + 1))
                }
            }
            for outcome in try HostileInputOracle.check(document: bytes) where outcome.payload != nil {
                accepted += 1
            }
        }
        // Most mutations break the line, but not all: both sides of every invariant are exercised.
        #expect(accepted > count / 100)
    }
}

/// The names of the regular files in `path`.
private func listFiles(_ path: String) throws -> [String] {
    guard let directory = opendir(path) else { throw HostileInputViolation(description: "cannot open \(path)") }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if !name.hasPrefix(".") { names.append(name) }
    }
    return names.sorted()
}

private func readFile(_ path: String) throws -> [UInt8] {
    guard let file = fopen(path, "rb") else { throw HostileInputViolation(description: "cannot read \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return bytes
}
