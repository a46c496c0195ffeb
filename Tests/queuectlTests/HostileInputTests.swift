import Foundation
import Testing
import EventQueueTestSupport

/// Hostile arguments and NDJSON: every rejection is exactly one line on stderr naming the field (and the line
/// for NDJSON), the documented exit status (64 usage, 65 data, 66 input missing), nothing on stdout, and the
/// queue is unchanged: counts and every row (id, kind, state, payload) before equal after. CLITests has the
/// first table of these; this one adds the nastier inputs.
@Suite struct HostileInputTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var arguments: [String]
        /// Written to a file whose path replaces "@FILE" in the arguments (raw bytes: invalid UTF-8, NULs).
        var file: [UInt8]? = nil
        var environment: [String: String] = [:]
        var status: Int32
        var message: String
        var testDescription: String { name }
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    static let valid = #"{"type":"event","external_id":"u1","name":"ok"}"#
    static let event = ["enqueue", "event", "e", "--external-id", "u1"]

    static let cases: [Case] = [
        // Arguments.
        .init(name: "unknown flag", arguments: event + ["--bogus"], status: 64, message: "--bogus"),
        .init(
            name: "unknown subcommand", arguments: ["frobnicate"], environment: ["EVENTQUEUE_DB": "@DB"], status: 64,
            message: "frobnicate"),
        .init(
            name: "missing value", arguments: ["enqueue", "event", "e", "--external-id"], status: 64,
            message: "--external-id"),
        .init(
            name: "missing argument", arguments: ["enqueue", "attribute", "email", "--external-id", "u1"],
            status: 64, message: "<value>"),
        .init(
            name: "two identities", arguments: event + ["--email", "a@b.co"], status: 64,
            message: #"two users named: --external-id "u1" and --email "a@b.co"; name exactly one user"#),
        .init(
            name: "alias without name", arguments: ["enqueue", "event", "e", "--alias", ":label"], status: 64,
            message: "--alias must be NAME:LABEL"),
        // Issue 22 #8: a second colon used to split at the first one (name "urn", label "x:1:crm", exit 0).
        .init(
            name: "alias with two colons", arguments: ["enqueue", "event", "e", "--alias", "urn:x:1:crm"],
            status: 64, message: "is ambiguous: it has more than one colon"),
        .init(
            name: "alias name without label", arguments: ["enqueue", "event", "e", "--alias-name", "urn:x"],
            status: 64, message: "--alias-name and --alias-label go together"),
        .init(
            name: "alias and alias name",
            arguments: ["enqueue", "event", "e", "--alias", "a:b"]
                + ["--alias-name", "c", "--alias-label", "d"], status: 64,
            message: #"two users named: --alias "a:b" and --alias-name "c" --alias-label "d""#),
        .init(
            name: "invalid JSON in --properties", arguments: event + ["--properties", #"{"a":"#], status: 64,
            message: "--properties must be a JSON object"),
        .init(
            name: "--properties not an object", arguments: event + ["--properties", "\"s\""], status: 64,
            message: "--properties must be a JSON object"),
        .init(
            name: "--prop without =", arguments: event + ["--prop", "novalue"], status: 64,
            message: "--prop must be KEY=VALUE"),
        .init(
            name: "--prop with empty key", arguments: event + ["--prop", "=1"], status: 64,
            message: "--prop must be KEY=VALUE"),
        .init(
            name: "huge property value",
            arguments: event + ["--prop", "big=" + String(repeating: "x", count: 100_000)],
            status: 65, message: "properties.big"),
        .init(
            name: "huge event name",
            arguments: [
                "enqueue", "event", String(repeating: "n", count: 70_000),
                "--external-id", "u1",
            ], status: 65, message: "name"),
        .init(
            name: "huge identity",
            arguments: [
                "enqueue", "event", "e", "--external-id",
                String(repeating: "u", count: 1000),
            ], status: 65,
            message: "external_id"),
        .init(
            name: "control character in identity", arguments: ["enqueue", "event", "e", "--external-id", "u\u{1}"],
            status: 65, message: "external_id must not contain control characters"),
        .init(
            name: "--time garbage", arguments: event + ["--time", "2026-13-45T99:00:00Z"], status: 65,
            message: "time"),
        .init(name: "--time shell", arguments: event + ["--time", "$(date)"], status: 65, message: "time"),
        .init(
            name: "--quantity not a number",
            arguments: [
                "enqueue", "purchase", "p", "--currency", "USD",
                "--price", "1", "--quantity", "many", "--external-id", "u1",
            ],
            status: 64, message: "--quantity"),
        .init(
            name: "--price overflow",
            arguments: [
                "enqueue", "purchase", "p", "--currency", "USD", "--price",
                "1e999", "--external-id", "u1",
            ], status: 64, message: "--price must be a number"),
        .init(
            name: "empty idempotency key", arguments: event + ["--key", ""], status: 65,
            message: "idempotency key"),
        .init(name: "negative peek limit", arguments: ["peek", "--limit", "-5"], status: 64, message: "--limit"),
        .init(
            name: "huge peek limit", arguments: ["peek", "--limit", "99999999999999999999999"], status: 64,
            message: "--limit"),
        .init(
            name: "negative dead list limit", arguments: ["dead", "list", "--limit", "-1"], status: 64,
            message: "--limit"),
        .init(name: "dead retry id not a number", arguments: ["dead", "retry", "abc"], status: 64, message: "abc"),
        .init(name: "dead purge id not a number", arguments: ["dead", "purge", "1", "1x"], status: 64, message: "1x"),
        .init(
            name: "dead purge id overflow", arguments: ["dead", "purge", "99999999999999999999"], status: 64,
            message: "99999999999999999999"),
        .init(
            name: "dead retry ids and --all", arguments: ["dead", "retry", "--all", "1"], status: 64,
            message: "either --all or one or more record ids"),
        .init(
            name: "dead retry live record", arguments: ["dead", "retry", "1"], status: 1,
            message: "not dead letters: 1"),
        .init(
            name: "drain batch size 0", arguments: ["drain", "--local", "--sink", "null", "--batch-size", "0"],
            status: 64, message: "--batch-size"),
        .init(
            name: "bad durability", arguments: event + ["--durability", "fast"], status: 64,
            message: "--durability must be full or normal"),
        .init(
            name: "negative busy timeout", arguments: event + ["--busy-timeout", "-1"], status: 64,
            message: "--busy-timeout"),
        .init(
            name: "bad busy timeout variable", arguments: event, environment: ["EVENTQUEUE_BUSY_TIMEOUT_MS": "soon"],
            status: 64, message: "EVENTQUEUE_BUSY_TIMEOUT_MS"),
        .init(
            name: "bad reserve variable", arguments: event, environment: ["EVENTQUEUE_MIN_FREE_BYTES": "-1"],
            status: 64, message: "EVENTQUEUE_MIN_FREE_BYTES"),
        // NDJSON.
        .init(
            name: "NDJSON invalid UTF-8", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(valid + "\n") + bytes(#"{"type":"event","external_id":"u1","name":"a"#) + [0xC3, 0x28]
                + bytes("\"}\n"), status: 65, message: "line 2: invalid record: record is not valid UTF-8"),
        .init(
            name: "NDJSON raw NUL byte", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(valid + "\n" + valid + "\n") + bytes(#"{"type":"event","external_id":"u1","name":"a"#)
                + [0] + bytes("b\"}\n"), status: 65, message: "line 3: invalid record"),
        .init(
            name: "NDJSON escaped NUL in the identity", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(valid + "\n" + #"{"type":"event","external_id":"u\u0000","name":"a"}"#), status: 65,
            message: "line 2: invalid record: external_id must not contain control characters"),
        .init(
            name: "NDJSON 10 MB line after valid ones", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(
                valid + "\n" + valid + "\n" + #"{"type":"event","external_id":"u1","name":""#
                    + String(repeating: "x", count: 10_000_000) + "\"}\n"),
            status: 65, message: "line 3: invalid record: record must be at most"),
        .init(
            name: "NDJSON blank and CRLF lines then an invalid one", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(valid + "\r\n\r\n   \n\t\n" + valid + "\r\n" + #"{"type":"event","name":"x"}"# + "\r\n"),
            status: 65, message: "line 6: invalid record"),
        .init(
            name: "NDJSON invalid line 1000", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(String(repeating: valid + "\n", count: 999) + #"{"type":"event","external_id":"u1"}"#),
            status: 65, message: "line 1000: invalid record: name"),
        .init(
            name: "NDJSON top-level array", arguments: ["enqueue", "--ndjson", "@FILE"], file: bytes("[1,2]\n"),
            status: 65, message: "line 1: invalid record: record must be a JSON object"),
        .init(
            name: "NDJSON identity of the wrong type", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(#"{"type":"event","external_id":5,"name":"x"}"#), status: 65,
            message: "line 1: invalid record: external_id"),
        .init(
            name: "NDJSON name of the wrong type", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(#"{"type":"event","external_id":"u1","name":["x"]}"#), status: 65,
            message: "line 1: invalid record: name"),
        .init(
            name: "NDJSON properties of the wrong type", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(#"{"type":"event","external_id":"u1","name":"x","properties":"p"}"#), status: 65,
            message: "line 1: invalid record: properties"),
        .init(
            name: "NDJSON type of the wrong type", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(#"{"type":1,"external_id":"u1","name":"x"}"#), status: 65,
            message: "line 1: invalid record: type"),
        .init(
            name: "NDJSON idempotency key of the wrong type", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(#"{"type":"event","external_id":"u1","name":"x","idempotency_key":7}"#), status: 65,
            message: "line 1: invalid record: idempotency_key must be a string"),
        .init(
            name: "NDJSON two identities", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(#"{"type":"event","external_id":"u1","braze_id":"b1","name":"x"}"#), status: 65,
            message: "line 1: invalid record:"),
        .init(
            name: "NDJSON trailing garbage", arguments: ["enqueue", "--ndjson", "@FILE"],
            file: bytes(valid + " {}\n"), status: 65, message: "line 1: invalid record"),
        .init(
            name: "NDJSON missing file", arguments: ["enqueue", "--ndjson", "/nonexistent/x.ndjson"], status: 66,
            message: "/nonexistent/x.ndjson"),
    ]

    @Test(arguments: cases)
    func rejectionIsOneLineNamingTheFieldAndTheQueueIsUnchanged(_ hostile: Case) async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let seed = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: db,
            stdin: Self.valid + "\n" + #"{"type":"attribute","external_id":"u2","email":"a@b.co"}"#, in: scratch)
        #expect(seed.status == 0, "\(seed.stderr)")
        let before = try await snapshot(db, in: scratch)
        var arguments = hostile.arguments
        if let file = hostile.file {
            let path = scratch.file("input.ndjson")
            try Data(file).write(to: URL(fileURLWithPath: path))
            arguments = arguments.map { $0 == "@FILE" ? path : $0 }
        }
        // EVENTQUEUE_DB=@DB: the queue comes from the environment (an unknown subcommand takes no --db).
        let result =
            hostile.environment["EVENTQUEUE_DB"] == "@DB"
            ? try await run(Products.queuectl, arguments, environment: ["EVENTQUEUE_DB": db], in: scratch)
            : try await queuectl(arguments, db: db, environment: hostile.environment, in: scratch)
        #expect(result.status == hostile.status, "stderr: \(result.stderr.prefix(300))")
        #expect(result.stdout.isEmpty, "stdout: \(result.stdout.prefix(300))")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(lines.count == 1 && result.stderr.hasSuffix("\n"), "stderr: \(result.stderr.prefix(500))")
        #expect(result.stderr.hasPrefix("queuectl: error: "), "stderr: \(result.stderr.prefix(300))")
        #expect(result.stderr.contains(hostile.message), "stderr: \(result.stderr.prefix(500))")
        #expect(result.stderr.utf8.count < 2_000, "an error line must not echo a huge input")
        #expect(try await snapshot(db, in: scratch) == before)
    }

    /// Counts as `status --json` reports them, and every row straight from SQLite.
    func snapshot(_ db: String, in scratch: Scratch) async throws -> String {
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let counts = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any] ?? [:]
        let summary = ["pending", "leased", "dead"].map { "\(counts[$0] ?? "?")" }.joined(separator: "/")
        let rows = try await sqlite3(
            db,
            "SELECT id, kind, state, attempts, payload FROM records ORDER BY id; SELECT count(*) FROM delivered_keys",
            in: scratch)
        return summary + "\n" + rows.joined(separator: "\n")
    }
}
