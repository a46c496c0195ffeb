import EventQueue
import Foundation
import Testing
import EventQueueTestSupport

/// Strings that look like SQL, shell, format strings or tricky Unicode are data: in event names, property keys
/// and values, attribute values and identities they are stored and delivered byte for byte, through the
/// command line and through NDJSON. The JSONL sink's object equals the input object exactly.
@Suite struct VerbatimStringsTests {
    static let strings: [String] = [
        "'); DROP TABLE records; --",
        "\" OR 1=1 --",
        "Robert'); DELETE FROM records WHERE ('1'='1",
        "x' UNION SELECT payload FROM records --",
        #"C:\path\to\new\file \\ \" \u0041"#,
        "\"quoted\" and 'single' and `backtick`",
        "%s %n %x %d %@ %%",
        "$(rm -rf /) ${HOME} `id` && echo pwned",
        "🙂 👩‍👩‍👧‍👦 🏳️‍🌈",
        "\u{200F}مرحبا\u{202E}txt.exe\u{202C}",
        "e\u{301} vs \u{E9}",
        "\u{FEFF}zero\u{200B}width\u{2060}",
        "line\u{2028}separator\u{2029}paragraph",
        "<script>alert(1)</script>",
        "{\"inc\": 1}",
        String(repeating: "🙂", count: 255),
    ]
    static let time = "2026-01-02T03:04:05Z"

    /// The string as a property key: keys may not start with `$` and have at most 255 characters.
    static func key(_ text: String) -> String { "k" + String(text.unicodeScalars.prefix(254)) }

    @Test func hostileStringsRoundTripThroughTheCommandLineAndNDJSON() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        var expected: [Int64: [String: Any]] = [:]
        for (index, text) in Self.strings.enumerated() {
            let name = String(text.unicodeScalars.prefix(255))
            // An event: the string as its name, a property key and values, and the user's id. (`--prop v=TEXT`
            // is a string only when TEXT is not JSON, as documented.)
            var properties: [String: Any] = [Self.key(text): text, "n": index]
            let propertiesJSON = Self.json(properties).serialized
            var arguments = [
                "enqueue", "event", name, "--external-id=\(text)", "--properties", propertiesJSON, "--time", Self.time,
            ]
            if (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) == nil {
                arguments += ["--prop", "v=\(text)"]
                properties["v"] = text
            }
            let event = try await queuectl(arguments, db: db, in: scratch)
            #expect(event.status == 0, "\(text): \(event.stderr)")
            if let id = Int64(event.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) {
                expected[id] = ["external_id": text, "name": name, "time": Self.time, "properties": properties]
            }
            // An attribute whose value is the string, for a user aliased by it.
            let attribute = try await queuectl(
                [
                    "enqueue", "attribute", "note",
                    text.hasPrefix("{") ? "\"\(text.replacingOccurrences(of: "\"", with: "\\\""))\"" : text,
                    "--alias-name", "n\(index)", "--alias-label=\(text)",
                ],
                db: db, in: scratch)
            #expect(attribute.status == 0, "\(text): \(attribute.stderr)")
            if let id = Int64(attribute.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) {
                expected[id] = ["user_alias": ["alias_name": "n\(index)", "alias_label": text], "note": text]
            }
        }
        // The same strings as NDJSON, one line per record, in one batch.
        var lines: [[String: Any]] = []
        for (index, text) in Self.strings.enumerated() {
            let name = String(text.unicodeScalars.prefix(255))
            lines.append([
                "type": "event", "braze_id": text, "name": name, "time": Self.time,
                "properties": [Self.key(text): text, "i": index, "nested": ["k": text]] as [String: Any],
            ])
            lines.append(["type": "attribute", "external_id": "nd-\(index)", "note": text, "tags": [text, "x"]])
        }
        let ndjson = lines.map { Self.json($0).serialized }
        let batch = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: db, stdin: ndjson.joined(separator: "\n"), in: scratch)
        #expect(batch.status == 0, "\(batch.stderr)")
        let ids = batch.stdout.split(separator: "\n").compactMap { Int64($0) }
        #expect(ids.count == lines.count)
        for (id, var line) in zip(ids, lines) {
            line["type"] = nil
            expected[id] = line
        }
        #expect(expected.count == Self.strings.count * 4)

        let out = scratch.file("delivered.jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
        // Foundation's JSONSerialization drops a leading U+FEFF from strings, so the sink's lines are read with
        // EventQueue's own parser (tested on its own in JSONParserTests) and compared byte for byte.
        let delivered = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        #expect(delivered.count == expected.count)
        for text in delivered {
            let line = try #require(try JSONValue.parse(String(text)).objectValue)
            let id = try #require(line["id"]?.numberValue?.integerValue)
            let object = Self.plain(try #require(line["object"]))
            let want = try #require(expected[id], "unexpected id \(id)")
            #expect(sameJSON(object, want), "id \(id): got \(object), want \(want)")
        }
    }

    /// Test data as a `JSONValue` (numbers here are all integers), keys in a fixed order.
    static func json(_ value: Any) -> JSONValue {
        switch value {
        case let string as String: return .string(string)
        case let number as Int: return .number(JSONNumber(number))
        case let array as [Any]: return .array(array.map(json))
        case let object as [String: Any]:
            return .object(
                JSONObject(
                    members: object.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
                        .map { JSONObject.Member(key: $0.key, value: json($0.value)) }))
        default: return .null
        }
    }

    /// A parsed `JSONValue` as plain Swift values, for `sameJSON`.
    static func plain(_ value: JSONValue) -> Any {
        if let string = value.stringValue { return string }
        if let number = value.numberValue { return NSNumber(value: number.integerValue ?? Int64.min) }
        if let array = value.arrayValue { return array.map(plain) }
        if let object = value.objectValue {
            var dictionary: [String: Any] = [:]
            for member in object { dictionary[member.key] = plain(member.value) }
            return dictionary
        }
        return NSNull()
    }

    /// JSON equality with strings compared as UTF-8 bytes (Swift's `==` would equate canonically equivalent
    /// strings such as "e\u{301}" and "\u{E9}", which must not pass for each other here).
    func sameJSON(_ left: Any, _ right: Any) -> Bool {
        switch (left, right) {
        case let (left as String, right as String):
            return Array(left.utf8) == Array(right.utf8)
        case let (left as [String: Any], right as [String: Any]):
            guard left.count == right.count else { return false }
            // Keys too are compared byte for byte.
            let leftByBytes = Dictionary(uniqueKeysWithValues: left.map { (Array($0.key.utf8), $0.value) })
            return right.allSatisfy { key, value in
                leftByBytes[Array(key.utf8)].map { sameJSON($0, value) } ?? false
            }
        case let (left as [Any], right as [Any]):
            return left.count == right.count && zip(left, right).allSatisfy { sameJSON($0, $1) }
        case let (left as NSNumber, right as NSNumber):
            return left == right
        default:
            return false
        }
    }
}
