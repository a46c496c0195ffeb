import Testing

@testable import EventQueueRecords

/// Generates arbitrary JSON values, biased towards the awkward parts: escapes, control characters, NUL,
/// non-ASCII (2-, 3- and 4-byte), U+2028, combining marks, odd number spellings and empty containers.
struct JSONValueGenerator {
    var random: SplitMix64
    private(set) var numbersMade = 0
    private(set) var numbersRejected = 0

    private static let scalars: [Unicode.Scalar] = [
        "a", "b", "Z", "0", "9", " ", "\"", "\\", "/", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{A}", "\u{C}",
        "\u{D}", "\u{1F}", "\u{7F}", "\u{80}", "é", "ß", "€", "\u{2028}", "\u{2029}", "\u{301}", "\u{FEFF}",
        "\u{FFFF}", "😀", "\u{10FFFF}", "{", "}", "[", "]", ":", ",",
    ]

    mutating func string() -> String {
        var result = String.UnicodeScalarView()
        // Mostly short strings, sometimes long ones (to exercise the 8-byte scans and buffer growth).
        let length = random.below(8) == 0 ? random.below(300) : random.below(12)
        for _ in 0..<length {
            result.append(random.below(3) == 0 ? random.pick(Self.scalars) : random.pick(["x", "y", "k", "-"]))
        }
        return String(result)
    }

    mutating func numberText() -> String {
        var text = random.below(3) == 0 ? "-" : ""
        if random.below(4) == 0 {
            text += "0"
        } else {
            text += String(1 + random.below(9))
            for _ in 0..<random.below(20) { text += String(random.below(10)) }
        }
        if random.below(3) == 0 {
            text += "."
            for _ in 0...random.below(6) { text += String(random.below(10)) }
        }
        if random.below(4) == 0 {
            text += random.pick(["e", "E"]) + random.pick(["", "+", "-"]) + String(random.below(280))
        }
        return text
    }

    mutating func value(depth: Int = 0) -> JSONValue {
        let kinds = depth >= 5 ? 4 : 6
        switch random.below(kinds) {
        case 0: return random.pick([.null, .bool(true), .bool(false)])
        case 1:
            let text = numberText()
            numbersMade += 1
            guard let number = JSONNumber(text: text) else {
                numbersRejected += 1
                return .null
            }
            return .number(number)
        case 2, 3: return .string(string())
        case 4: return .array((0..<random.below(6)).map { _ in value(depth: depth + 1) })
        default:
            var members: [JSONObject.Member] = []
            for _ in 0..<random.below(7) {
                let key = string()
                guard !members.contains(where: { $0.key == key }) else { continue }
                members.append(JSONObject.Member(key: key, value: value(depth: depth + 1)))
            }
            return .object(JSONObject(members: members))
        }
    }
}

@Suite struct JSONSerializerTests {
    @Test(
        arguments: [
            (JSONValue.null, "null"),
            (.bool(true), "true"),
            (.bool(false), "false"),
            (.number(JSONNumber(42)), "42"),
            (.number(JSONNumber(validatedText: "1.50")), "1.50"),
            (.number(JSONNumber(validatedText: "-0")), "-0"),
            (.number(JSONNumber(validatedText: "1E+2")), "1E+2"),
            (.string(""), #""""#),
            (.string("plain"), #""plain""#),
            (.string("a\"b\\c/d"), #""a\"b\\c/d""#),
            (.string("\u{8}\u{C}\n\r\t"), #""\b\f\n\r\t""#),
            (.string("\u{0}"), #""\u0000""#),
            (.string("\u{1}\u{1A}\u{1F}"), #""\u0001\u001a\u001f""#),
            (.string("\u{7F}é€😀\u{2028}\u{2029}"), "\"\u{7F}é€😀\u{2028}\u{2029}\""),
            (.array([]), "[]"),
            (.object(JSONObject()), "{}"),
            ([1, "a", nil, [true, [:]]], #"[1,"a",null,[true,{}]]"#),
            (["b": 1, "a": ["c": [], "\n": "\u{0}"]], #"{"b":1,"a":{"c":[],"\n":"\u0000"}}"#),
        ] as [(JSONValue, String)])
    func serializesCompactly(value: JSONValue, expected: String) throws {
        #expect(value.serialized == expected)
        var buffer: [UInt8] = []
        value.serialize(into: &buffer)
        #expect(buffer == Array(expected.utf8))
        #expect(try JSONValue.parse(expected) == value)
    }

    @Test func escapesAtEveryPositionAroundTheWordScan() throws {
        // A special character at each offset of strings longer than 8 bytes, so the 8-byte scan and the byte
        // loop both have to find it.
        for special in ["\"", "\\", "\n", "\u{0}", "\u{1F}"] {
            for length in [7, 8, 9, 16, 17, 25] {
                for position in 0..<length {
                    var characters = Array(repeating: Character("x"), count: length)
                    characters[position] = Character(special)
                    let string = String(characters)
                    let serialized = JSONValue.string(string).serialized
                    #expect(try JSONValue.parse(serialized) == .string(string))
                    #expect(serialized.utf8.count == length + 2 + (special == "\u{0}" || special == "\u{1F}" ? 5 : 1))
                }
            }
        }
    }

    @Test func serializeIntoAppendsToExistingBytes() {
        var buffer = Array("prefix:".utf8)
        JSONValue.array([1, 2]).serialize(into: &buffer)
        buffer.append(UInt8(ascii: ";"))
        let object: JSONObject = ["k": "v"]
        object.serialize(into: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"prefix:[1,2];{"k":"v"}"#)
    }

    @Test func objectSerializationMatchesTheValueSerialization() {
        var object = JSONObject()
        object["z"] = 1
        object["a"] = ["nested": [true, nil]]
        object["m"] = "x"
        object["z"] = 2  // replaced in place: keeps its position
        #expect(object.serialized == #"{"z":2,"a":{"nested":[true,null]},"m":"x"}"#)
        #expect(JSONValue.object(object).serialized == object.serialized)
    }

    @Test func largeValuesGrowTheBuffer() throws {
        let long = String(repeating: "abc\"é\n", count: 200_000)
        let value: JSONValue = ["long": .string(long), "list": .array((0..<10_000).map { .number(JSONNumber($0)) })]
        let text = value.serialized
        // {"long":"  +  9 bytes per unit (a b c \" é é \n)  +  ","list":[  +  digits  +  commas  +  ]}
        let digits = 10 * 1 + 90 * 2 + 900 * 3 + 9000 * 4
        #expect(text.utf8.count == 9 + 200_000 * 9 + 10 + digits + 9_999 + 2)
        #expect(try JSONValue.parse(text) == value)
    }

    @Test(arguments: [
        "null",
        "0",
        #""""#,
        "[]",
        "{}",
        #"{"external_id":"u-1","name":"purchase","time":"2026-11-22T04:17:10.123Z","props":{"price":19.99}}"#,
        #"[1.50,-0,1E+2,0.000001e-7,12345678901234567890123]"#,
        #"{"s":"\"\\\/\b\f\n\r\t\u0000\u001f","u":"é😀\u2028"}"#,
        #"[[[[[]]]],{"a":{"b":{"c":{}}}}]"#,
    ])
    func reproducesCompactDocuments(text: String) throws {
        let reserialized = try JSONValue.parse(text).serialized
        // `\/` and `\u2028` are decoded and written back unescaped; everything else is byte-identical.
        let canonical = text.replacing(#"\/"#, with: "/").replacing(#"\u2028"#, with: "\u{2028}")
        #expect(reserialized == canonical)
        #expect(try JSONValue.parse(reserialized).serialized == reserialized)
    }

    @Test func randomValuesRoundTrip() throws {
        var generator = JSONValueGenerator(random: SplitMix64(seed: 20_261_122))
        var bytes: [UInt8] = []
        for _ in 0..<4000 {
            let value = generator.value()
            let text = value.serialized
            let parsed = try JSONValue.parse(text)
            #expect(parsed == value, "\(text)")
            #expect(parsed.serialized == text)
            bytes.removeAll(keepingCapacity: true)
            value.serialize(into: &bytes)
            #expect(try JSONValue.parse(utf8: bytes) == value)
        }
        // The generator's number spellings are all valid JSON numbers (none silently replaced by null).
        #expect(generator.numbersMade > 1000)
        #expect(generator.numbersRejected == 0)
    }
}

@Suite struct JSONNumberTextTests {
    @Test(arguments: ["0", "-0", "7", "1.5", "-12.25", "1e3", "1E+3", "-0.0e-5", "1e-400", "1.7976931348623157e308"])
    func acceptsAFiniteJSONNumber(_ text: String) {
        #expect(JSONNumber(text: text)?.text == text)
    }

    @Test(arguments: [
        "", " 1", "1 ", "01", "+1", "1.", ".5", "1e", "1e+", "-", "NaN", "Infinity", "1e999", "-1e999", "0x1",
        "1_000", "1,5", "\"1\"", "[1]",
    ])
    func refusesAnythingElse(_ text: String) {
        #expect(JSONNumber(text: text) == nil)
    }
}
