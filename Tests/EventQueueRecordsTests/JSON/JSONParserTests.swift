import Testing

@testable import EventQueueRecords

/// Parses `text`, returning the error it throws (or `nil` when it parses).
private func parseError(_ text: String, limits: JSONParseLimits = .init()) -> JSONParseError? {
    do {
        _ = try JSONValue.parse(text, limits: limits)
        return nil
    } catch {
        return error
    }
}

private func parseError(utf8 bytes: [UInt8]) -> JSONParseError? {
    do {
        _ = try JSONValue.parse(utf8: bytes)
        return nil
    } catch {
        return error
    }
}

private func number(_ text: String) -> JSONValue {
    .number(JSONNumber(validatedText: text))
}

/// An input that must be rejected, where, and why.
struct Rejection: Sendable, CustomStringConvertible {
    var input: String
    var offset: Int
    var message: String

    init(_ input: String, _ offset: Int, _ message: String) {
        self.input = input
        self.offset = offset
        self.message = message
    }

    var description: String { input.debugDescription }
}

struct ByteRejection: Sendable, CustomStringConvertible {
    var bytes: [UInt8]
    var offset: Int
    var message: String

    init(_ bytes: [UInt8], _ offset: Int, _ message: String) {
        self.bytes = bytes
        self.offset = offset
        self.message = message
    }

    var description: String { bytes.map { String($0, radix: 16) }.joined(separator: " ") }
}

@Suite struct JSONParserTests {
    // MARK: Accepted documents

    @Test(
        arguments: [
            ("null", JSONValue.null),
            ("true", .bool(true)),
            ("false", .bool(false)),
            ("0", number("0")),
            ("-0", number("-0")),
            ("1.50", number("1.50")),
            ("-12.5e-3", number("-12.5e-3")),
            ("1E+2", number("1E+2")),
            ("\"\"", .string("")),
            ("\"héllo\"", .string("héllo")),
            ("[]", .array([])),
            ("{}", .object(JSONObject())),
            ("[1,\"a\",null,[true]]", .array([number("1"), .string("a"), .null, .array([.bool(true)])])),
            (" \t\r\n {\"a\" : [ 1 , 2 ] } \n", ["a": [1, 2]]),
        ] as [(String, JSONValue)])
    func acceptsValidDocuments(text: String, expected: JSONValue) throws {
        #expect(try JSONValue.parse(text) == expected)
        #expect(try JSONValue.parse(utf8: Array(text.utf8)) == expected)
    }

    @Test func keepsMemberOrderAndNumberText() throws {
        let value = try JSONValue.parse(#"{"b":1.50,"a":-0,"c":{"z":1e2,"y":0.10}}"#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["b", "a", "c"])
        #expect(object["b"]?.numberValue?.text == "1.50")
        #expect(object["a"]?.numberValue?.text == "-0")
        #expect(object["c"]?.objectValue?.keys == ["z", "y"])
        #expect(object["c"]?.objectValue?["y"]?.numberValue?.text == "0.10")
    }

    @Test(arguments: [
        "12345678901234567890123456789",  // far beyond Int64, fine as a Double
        "1e308",
        "-1.7976931348623157e308",
        "1e-400",  // underflows to 0: finite, so accepted with its text kept
        String(repeating: "9", count: 308),
        "0." + String(repeating: "0", count: 1000) + "1",
        "1.5e3",
        "0.0001e310",  // 1e306: the leading zeros count
        "1" + String(repeating: "0", count: 400) + "e-200",  // 1e200: the exponent counts
        "1e-99999999999999999999",
        "-2.5E-7",
    ])
    func acceptsHugeButFiniteNumbers(text: String) throws {
        let value = try JSONValue.parse("[\(text)]")
        #expect(value.arrayValue?.first?.numberValue?.text == text)
        #expect(value.arrayValue?.first?.numberValue?.doubleValue.isFinite == true)
    }

    @Test func integerTextSurvivesBeyondDoublePrecision() throws {
        let value = try JSONValue.parse(#"{"id":9007199254740993}"#)
        #expect(value.objectValue?["id"]?.numberValue?.text == "9007199254740993")
        #expect(value.objectValue?["id"]?.numberValue?.integerValue == 9_007_199_254_740_993)
    }

    // MARK: Strings

    @Test(arguments: [
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
        (#""\u0041\u00e9\u20AC""#, "Aé€"),
        (#""\ud83d\ude00""#, "😀"),
        (#""\uD83D\uDE00x""#, "😀x"),
        (#""\udbff\udfff""#, "\u{10FFFF}"),
        (#""a\u0000b""#, "a\u{0}b"),
        (#""\u001f\u007f""#, "\u{1F}\u{7F}"),
        (
            #""plain run before \n and after, long enough for the 8-byte scan""#,
            "plain run before \n and after, long enough for the 8-byte scan"
        ),
        (#""é\n€\t😀""#, "é\n€\t😀"),
    ])
    func decodesEscapes(text: String, expected: String) throws {
        #expect(try JSONValue.parse(text) == .string(expected))
    }

    @Test func nulEscapeKeepsTheNulCharacter() throws {
        let value = try JSONValue.parse(#"{"k\u0000":"\u0000"}"#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["k\u{0}"])
        #expect(object["k\u{0}"]?.stringValue?.utf8.elementsEqual([0]) == true)
    }

    @Test(
        arguments: [
            [0xC2, 0x80],  // U+0080, smallest 2-byte
            [0xDF, 0xBF],  // U+07FF
            [0xE0, 0xA0, 0x80],  // U+0800, smallest 3-byte
            [0xED, 0x9F, 0xBF],  // U+D7FF, just below the surrogates
            [0xEE, 0x80, 0x80],  // U+E000, just above them
            [0xEF, 0xBF, 0xBF],  // U+FFFF
            [0xF0, 0x90, 0x80, 0x80],  // U+10000, smallest 4-byte
            [0xF4, 0x8F, 0xBF, 0xBF],  // U+10FFFF, the largest scalar
        ] as [[UInt8]])
    func acceptsEveryValidUTF8Boundary(sequence: [UInt8]) throws {
        // Placed both at the start and after 8+ ASCII bytes, so both the byte loop and the word scan see it.
        let content = sequence + Array("abcdefghij".utf8) + sequence
        let bytes = [0x22] + content + [0x22]
        let value = try JSONValue.parse(utf8: bytes)
        #expect(value.stringValue.map { Array($0.utf8) } == content)
    }

    @Test func parsesATenMegabyteString() throws {
        let length = 10 * 1024 * 1024
        var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length + 2)
        bytes[0] = 0x22
        bytes[length + 1] = 0x22
        bytes[length / 2] = 0xC3  // an "é" in the middle
        bytes[length / 2 + 1] = 0xA9
        let value = try JSONValue.parse(utf8: bytes)
        let string = try #require(value.stringValue)
        #expect(string.utf8.count == length)
        #expect(string.unicodeScalars.filter { $0 == "é" }.count == 1)
    }

    @Test func parsesALongStringWithManyEscapes() throws {
        let unit = #"abc\n\"\u00e9\ud83d\ude00"#
        let text = "\"" + String(repeating: unit, count: 50_000) + "\""
        let value = try JSONValue.parse(text)
        #expect(value.stringValue == String(repeating: "abc\n\"é😀", count: 50_000))
    }

    // MARK: Rejections

    @Test(arguments: [
        // Structure
        Rejection("", 0, "unexpected end of input, expected a JSON value"),
        Rejection("   ", 3, "unexpected end of input, expected a JSON value"),
        Rejection("1 2", 2, "unexpected character '2', expected end of input"),
        Rejection("{}x", 2, "unexpected character 'x', expected end of input"),
        Rejection("[1 2]", 3, "unexpected character '2', expected ',' or ']'"),
        Rejection("[1,]", 3, "trailing comma in array"),
        Rejection(#"{"a":1,}"#, 7, "trailing comma in object"),
        Rejection(#"{"a" 1}"#, 5, "unexpected character '1', expected ':' after the key"),
        Rejection("{a:1}", 1, "unexpected character 'a', expected a string key"),
        Rejection(#"{"a":}"#, 5, "unexpected character '}', expected a JSON value"),
        Rejection(#"{"a":1"#, 6, "unexpected end of input, expected ',' or '}'"),
        Rejection(#"{"a":1]"#, 6, "unexpected character ']', expected ',' or '}'"),
        Rejection("[", 1, "unexpected end of input, expected a JSON value"),
        Rejection("[1", 2, "unexpected end of input, expected ',' or ']'"),
        Rejection("{", 1, "unexpected end of input, expected a string key"),
        Rejection(#"{"a""#, 4, "unexpected end of input, expected ':'"),
        Rejection("]", 0, "unexpected character ']', expected a JSON value"),
        Rejection("'a'", 0, "unexpected character ''', expected a JSON value"),
        Rejection("[é]", 1, "unexpected character U+00E9, expected a JSON value"),
        Rejection("\u{FEFF}{}", 0, "byte order mark (U+FEFF) is not allowed"),
        Rejection("\u{1}", 0, "unexpected character 0x01, expected a JSON value"),
        // Literals
        Rejection("tru", 0, #"invalid literal "tru""#),
        Rejection("True", 0, #"invalid literal "True""#),
        Rejection("nul", 0, #"invalid literal "nul""#),
        Rejection("[undefined]", 1, #"invalid literal "undefined""#),
        Rejection("falsey", 5, "unexpected character 'y', expected end of input"),
        Rejection("NaN", 0, #"invalid literal "NaN" (JSON has no NaN or Infinity)"#),
        Rejection("Infinity", 0, #"invalid literal "Infinity" (JSON has no NaN or Infinity)"#),
        // Numbers
        Rejection("-Infinity", 1, "invalid number: expected a digit after '-'"),
        Rejection("01", 0, "invalid number: leading zeros are not allowed"),
        Rejection("[-007]", 1, "invalid number: leading zeros are not allowed"),
        Rejection("+1", 0, "invalid number: a leading '+' is not allowed"),
        Rejection(".5", 0, "invalid number: expected a digit before '.'"),
        Rejection("1.", 2, "invalid number: expected a digit after '.'"),
        Rejection("1.e5", 2, "invalid number: expected a digit after '.'"),
        Rejection("1e", 2, "invalid number: expected a digit in the exponent"),
        Rejection("1e+", 3, "invalid number: expected a digit in the exponent"),
        Rejection("-", 1, "invalid number: expected a digit after '-'"),
        Rejection("0x10", 1, "unexpected character 'x', expected end of input"),
        Rejection("1e400", 0, "number out of range"),
        Rejection("[0,-1e400]", 3, "number out of range"),
        Rejection("1.8e308", 0, "number out of range"),
        Rejection(String(repeating: "9", count: 309), 0, "number out of range"),
        Rejection("0.5e309", 0, "number out of range"),
        Rejection("[1e99999999999999999999]", 1, "number out of range"),
        Rejection("1" + String(repeating: "0", count: 400) + "e-50", 0, "number out of range"),
        // Strings
        Rejection(#""abc"#, 0, "unterminated string"),
        Rejection(#""abc\"#, 0, "unterminated string"),
        Rejection("\"a\u{1}b\"", 2, "unescaped control character 0x01 in string"),
        Rejection("\"a\nb\"", 2, "unescaped control character 0x0A in string"),
        Rejection("\"a\u{0}b\"", 2, "unescaped control character 0x00 in string"),
        Rejection("\"0123456789\tx\"", 11, "unescaped control character 0x09 in string"),
        Rejection(#""a\nb\u{1}""#, 5, "invalid \\u escape: expected 4 hex digits"),
        Rejection(#""\x""#, 1, #"invalid escape "\x""#),
        Rejection(#""\'""#, 1, #"invalid escape "\'""#),
        Rejection(#""ab\é""#, 3, #"invalid escape "\é""#),
        Rejection(#""\u12""#, 1, "invalid \\u escape: expected 4 hex digits"),
        Rejection(#""\u12G4""#, 1, "invalid \\u escape: expected 4 hex digits"),
        Rejection(#""\ud800""#, 1, #"unpaired high surrogate "\ud800""#),
        Rejection(#""\ud800x""#, 1, #"unpaired high surrogate "\ud800""#),
        Rejection(#""ab\uDBFF\u0041""#, 3, #"followed by "\u0041", not a low surrogate"#),
        Rejection(#""\ud800\ud800""#, 1, #"followed by "\ud800", not a low surrogate"#),
        Rejection(#""\ud800\u12""#, 7, "invalid \\u escape: expected 4 hex digits"),
        Rejection(#""\udc00""#, 1, #"unpaired low surrogate "\udc00""#),
        Rejection(#""\uDFFF\uD800""#, 1, #"unpaired low surrogate "\uDFFF""#),
        // Duplicate keys
        Rejection(#"{"a":1,"a":2}"#, 7, #"duplicate key "a""#),
        Rejection(#"{"a":1,"b":{"c":1,"c":2}}"#, 18, #"duplicate key "c""#),
        Rejection(#"{"a\"b":1,"a\u0022b":2}"#, 10, #"duplicate key "a\"b""#),
        Rejection(#"[{"x":1},{"x":1,"x":1}]"#, 16, #"duplicate key "x""#),
    ])
    func rejects(_ rejection: Rejection) throws {
        let error = try #require(parseError(rejection.input))
        #expect(error.offset == rejection.offset)
        #expect(error.message.contains(rejection.message))
        // The byte entry point reports exactly the same.
        #expect(parseError(utf8: Array(rejection.input.utf8)) == error)
    }

    @Test(arguments: [
        ByteRejection([0x22, 0xC0, 0xAF, 0x22], 1, "invalid UTF-8: overlong encoding"),
        ByteRejection([0x22, 0xC1, 0xBF, 0x22], 1, "invalid UTF-8: overlong encoding"),
        ByteRejection([0x22, 0xE0, 0x80, 0xAF, 0x22], 1, "invalid UTF-8: overlong encoding"),
        ByteRejection([0x22, 0xE0, 0x9F, 0xBF, 0x22], 1, "invalid UTF-8: overlong encoding"),
        ByteRejection([0x22, 0xF0, 0x80, 0x80, 0xAF, 0x22], 1, "invalid UTF-8: overlong encoding"),
        ByteRejection([0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22], 1, "invalid UTF-8: overlong encoding"),
        ByteRejection([0x22, 0xED, 0xA0, 0x80, 0x22], 1, "invalid UTF-8: encoded surrogate"),
        ByteRejection([0x22, 0xED, 0xBF, 0xBF, 0x22], 1, "invalid UTF-8: encoded surrogate"),
        ByteRejection([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1, "invalid UTF-8: code point above U+10FFFF"),
        ByteRejection([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], 1, "invalid UTF-8: byte 0xF5 never appears in UTF-8"),
        ByteRejection([0x22, 0xFF, 0x22], 1, "invalid UTF-8: byte 0xFF never appears in UTF-8"),
        ByteRejection([0x22, 0x80, 0x22], 1, "invalid UTF-8: unexpected continuation byte 0x80"),
        ByteRejection([0x22, 0xE2, 0x82, 0x22], 1, "invalid UTF-8: truncated sequence"),
        ByteRejection([0x22, 0xF0, 0x9F, 0x98, 0x22], 1, "invalid UTF-8: truncated sequence"),
        ByteRejection([0x22, 0xC3], 1, "invalid UTF-8: truncated sequence"),
        ByteRejection([0x22, 0xE2, 0x82], 1, "invalid UTF-8: truncated sequence"),
        ByteRejection([0x22, 0xC3, 0x41, 0x22], 1, "invalid UTF-8: truncated sequence"),
        ByteRejection(Array(#""0123456789"#.utf8) + [0xC0, 0xAF, 0x22], 11, "invalid UTF-8: overlong encoding"),
        ByteRejection(
            Array(#""a\n0123456789"#.utf8) + [0xED, 0xA0, 0x80, 0x22], 14, "invalid UTF-8: encoded surrogate"),
        ByteRejection([0xC3], 0, "invalid UTF-8: truncated sequence"),
        ByteRejection([0x22, 0x5C, 0xC0, 0xAF, 0x22], 2, "invalid UTF-8: overlong encoding"),
        ByteRejection([0x5B, 0xFF, 0x5D], 1, "invalid UTF-8: byte 0xFF never appears in UTF-8"),
        ByteRejection([0x31, 0x20, 0xE2, 0x82], 2, "invalid UTF-8: truncated sequence"),
        ByteRejection([0xEF, 0xBB, 0xBF, 0x7B, 0x7D], 0, "byte order mark (U+FEFF) is not allowed"),
    ])
    func rejectsInvalidUTF8(_ rejection: ByteRejection) throws {
        let error = try #require(parseError(utf8: rejection.bytes))
        #expect(error.offset == rejection.offset)
        #expect(error.message == rejection.message)
    }

    @Test func errorDescriptionNamesTheByteOffset() throws {
        let error = try #require(parseError(#"{"a":1,"a":2}"#))
        #expect(error.description == #"invalid JSON at byte 7: duplicate key "a""#)
        #expect("\(error)" == error.description)
    }

    @Test func duplicateKeysAreFoundInLargeObjects() throws {
        // Past 16 members the parser switches from a linear scan to a set; both must catch duplicates.
        let members = (0..<1000).map { #""k\#($0)":\#($0)"# }
        let unique = "{" + members.joined(separator: ",") + "}"
        let object = try #require(try JSONValue.parse(unique).objectValue)
        #expect(object.count == 1000)
        #expect(object["k999"] == 999)

        for duplicate in [3, 15, 16, 17, 998] {
            let prefix = "{" + members.joined(separator: ",") + ","
            let text = prefix + #""k\#(duplicate)":0}"#
            let error = parseError(text)  // kept out of the expectations: `text` is long
            #expect(error?.offset == prefix.utf8.count)
            #expect(error?.message == #"duplicate key "k\#(duplicate)""#)
        }
    }

    @Test func canonicallyEquivalentKeysAreDuplicates() throws {
        // Keys compare like Swift strings (as `JSONObject` lookups do), so "é" and "e" + U+0301 collide.
        let error = try #require(parseError(#"{"é":1,"e\u0301":2}"#))
        #expect(error.message.hasPrefix("duplicate key"))
        #expect(error.offset == 8)
    }

    @Test func longDuplicateKeysAreAbbreviatedInTheMessage() throws {
        let key = String(repeating: "x", count: 500)
        let error = try #require(parseError(#"{"\#(key)":1,"\#(key)":2}"#))
        #expect(error.message == "duplicate key \"" + String(repeating: "x", count: 100) + "…\"")
    }

    // MARK: Depth

    @Test func acceptsNestingUpToTheLimit() throws {
        let arrays = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try JSONValue.parse(arrays) != .null)
        let objects = String(repeating: #"{"a":"#, count: 63) + "{}" + String(repeating: "}", count: 63)
        #expect(try JSONValue.parse(objects).objectValue?.keys == ["a"])
    }

    @Test(arguments: [
        (String(repeating: "[", count: 65) + String(repeating: "]", count: 65), 64),
        (String(repeating: "[", count: 100_000), 64),
        (String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65), 64 * 5),
        ("[" + String(repeating: #"{"a":["#, count: 40), 1 + 31 * 6 + 5),
    ])
    func rejectsNestingBeyondTheLimit(text: String, offset: Int) throws {
        let error = try #require(parseError(text))
        #expect(error.offset == offset)
        #expect(error.message == "nesting deeper than 64 levels")
    }

    @Test func tenMegabytesOfOpeningBracketsFailFast() throws {
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: 10 * 1024 * 1024)
        let clock = ContinuousClock()
        let start = clock.now
        let error = try #require(parseError(utf8: bytes))
        #expect(clock.now - start < .seconds(1))
        #expect(error == JSONParseError(offset: 64, message: "nesting deeper than 64 levels"))
    }

    @Test func customDepthLimits() throws {
        let zero = JSONParseLimits(maxDepth: 0)
        #expect(try JSONValue.parse("1", limits: zero) == 1)
        #expect(parseError("[]", limits: zero) == JSONParseError(offset: 0, message: "nesting deeper than 0 levels"))
        #expect(parseError(" {}", limits: zero)?.offset == 1)

        // The parser itself does not recurse, so a generous limit works for deep (but not absurd) documents.
        let depth = 2000
        let deep = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var value = try JSONValue.parse(deep, limits: JSONParseLimits(maxDepth: depth))
        var levels = 0
        while let inner = value.arrayValue {
            levels += 1
            value = inner.first ?? .null
        }
        #expect(levels == depth)
        #expect(parseError(deep, limits: JSONParseLimits(maxDepth: depth - 1))?.offset == depth - 1)
    }

    // MARK: Entry points

    @Test func everyByteEntryPointAgrees() throws {
        let text = #"{"name":"purchase","props":{"price":19.99,"tags":["a","é"]}}"#
        let expected = try JSONValue.parse(text)
        let bytes = Array(text.utf8)
        #expect(try JSONValue.parse(utf8: bytes) == expected)
        #expect(try JSONValue.parse(utf8: ([0x20] + bytes + [0x20])[1...]) == expected)
        #expect(try JSONValue.parse(utf8: bytes.lazy.map { $0 }) == expected)  // not contiguous: copied once
        #expect(try JSONValue.parse(utf8: text.utf8) == expected)
        let fromRawBuffer = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) in try JSONValue.parse(utf8: raw) }
        }
        #expect(try fromRawBuffer.get() == expected)
        #expect(
            parseError(utf8: [UInt8]())
                == JSONParseError(offset: 0, message: "unexpected end of input, expected a JSON value"))
    }

    @Test func stringEntryPointWorksOnDerivedStrings() throws {
        let source = "xx[1,2]yy"
        let slice = String(source.dropFirst(2).dropLast(2))
        #expect(try JSONValue.parse(slice) == [1, 2])
    }

    // MARK: Robustness

    @Test func mutatedDocumentsNeverCrashAndErrorsPointInsideTheInput() throws {
        let seeds = [
            #"{"a":[1,2.5e3,"x\u00e9\n"],"b":{"c":null,"d":true},"e":"😀"}"#,
            #"[-0.0,"\ud83d\ude00",{"":false},[],{}]"#,
        ]
        var random = SplitMix64(seed: 0x5EED)
        var accepted = 0
        var rejected = 0
        for seed in seeds {
            let original = Array(seed.utf8)
            for _ in 0..<3000 {
                var bytes = original
                for _ in 0..<(1 + random.below(3)) {
                    let position = random.below(bytes.count)
                    switch random.below(3) {
                    case 0: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                    case 1: bytes.remove(at: position)
                    default: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                    }
                    if bytes.isEmpty { bytes = [0x30] }
                }
                do {
                    let value = try JSONValue.parse(utf8: bytes)
                    accepted += 1
                    #expect(try JSONValue.parse(value.serialized) == value)
                } catch {
                    rejected += 1
                    #expect(error.offset >= 0 && error.offset <= bytes.count)
                    #expect(!error.message.isEmpty)
                }
            }
        }
        #expect(accepted + rejected == 6000)
        #expect(accepted > 0 && rejected > 0)
    }
}
