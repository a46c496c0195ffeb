import Foundation
import Testing
import EventQueue
import EventQueueTestSupport

/// Every rejection is one line on stderr naming what was wrong, a non-zero exit, and the queue is unchanged.
@Suite struct CLITests {
    struct BadInvocation: CustomTestStringConvertible, Sendable {
        var arguments: [String]
        var stdin: String?
        var status: Int32
        var message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let badInvocations: [BadInvocation] = [
        .init(
            arguments: ["enqueue", "event", "", "--external-id", "u1"], status: 65,
            message: "name must be 1 to 255 characters"),
        .init(
            arguments: ["enqueue", "event", String(repeating: "n", count: 256), "--external-id", "u1"], status: 65,
            message: "name"),
        .init(arguments: ["enqueue", "event", "e"], status: 64, message: "name exactly one user"),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--braze-id", "b"], status: 64,
            message: "name exactly one user"),
        // Issue 39 #4: a repeated flag was dropped silently (the last one won).
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "a", "--external-id", "b"], status: 64,
            message: #"two users named: --external-id "a" and --external-id "b""#),
        .init(
            arguments: ["enqueue", "event", "e", "--alias-name", "n", "--alias-label", "l", "--alias-name", "m"],
            status: 64, message: #"two users named: --alias-name "n" and --alias-name "m""#),
        .init(
            arguments: ["forget", "--external-id", "u1", "--external-id", "u2"], status: 64,
            message: #"two users named: --external-id "u1" and --external-id "u2""#),
        .init(
            arguments: ["forget", "--email", "a@b.co", "--alias", "n:l"], status: 64,
            message: #"two users named: --email "a@b.co" and --alias "n:l""#),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--key", "k1", "--key", "k2"], status: 64,
            message: #"--key given twice: "k1" and "k2""#),
        .init(
            arguments: ["enqueue", "attribute", "color", "red", "--external-id", "u1", "--key", "k1", "--key", "k2"],
            status: 64, message: #"--key given twice: "k1" and "k2""#),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--prop", "$bad=1"], status: 65,
            message: "properties.$bad"),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--prop", "time=1"], status: 65,
            message: "properties.time"),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--time", "yesterday"], status: 65,
            message: "time"),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--properties", "[1,2]"], status: 64,
            message: "--properties must be a JSON object"),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--prop", "noequals"], status: 64,
            message: "--prop must be KEY=VALUE"),
        .init(
            arguments: ["enqueue", "event", "e", "--alias", "nolabel"], status: 64,
            message: "--alias must be NAME:LABEL"),
        .init(
            arguments: ["enqueue", "attribute", "gender", "X", "--external-id", "u1"], status: 65, message: "gender"),
        .init(
            arguments: ["enqueue", "attribute", "dob", "2023-02-30", "--external-id", "u1"], status: 65, message: "dob"),
        .init(
            arguments: ["enqueue", "attribute", "email", "not-an-email", "--external-id", "u1"], status: 65,
            message: "email"),
        .init(
            arguments: ["enqueue", "purchase", "p", "--currency", "ZZZ", "--price", "1", "--external-id", "u1"],
            status: 65, message: "currency"),
        .init(
            arguments: ["enqueue", "purchase", "p", "--currency", "USD", "--price", "abc", "--external-id", "u1"],
            status: 64, message: "--price must be a number"),
        .init(
            arguments: [
                "enqueue", "purchase", "p", "--currency", "USD", "--price", "1", "--quantity", "101",
                "--external-id", "u1",
            ], status: 65, message: "quantity"),
        .init(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--key", String(repeating: "k", count: 300)],
            status: 65, message: "idempotency key"),
        .init(
            arguments: ["enqueue", "--ndjson", "-"],
            stdin: #"{"type":"event","external_id":"u1","name":"ok"}"# + "\n" + #"{"type":"event","external_id":"u1""#,
            status: 65, message: "line 2: invalid record: record is not valid JSON"),
        .init(
            arguments: ["enqueue", "--ndjson", "-"],
            stdin: #"{"type":"event","external_id":"u1","name":"ok"}"# + "\n\n" + #"{"type":"bogus"}"#, status: 65,
            message: "line 3: invalid record: type must be one of event, attribute, purchase"),
        .init(
            arguments: ["enqueue", "--ndjson", "-"],
            stdin: #"{"type":"event","external_id":"u1","name":"a","name":"b"}"#,
            status: 65, message: "duplicate key"),
        .init(
            arguments: ["enqueue", "--ndjson", "-"], stdin: "[" + String(repeating: "[", count: 100_000), status: 65,
            message: "line 1"),
        .init(
            arguments: ["enqueue", "--ndjson", "-"],
            stdin: #"{"type":"event","external_id":"u1","name":"x","properties":{"p":1e999}}"#, status: 65,
            message: "number"),
        .init(
            arguments: ["enqueue", "--ndjson", "-"],
            stdin: #"{"type":"event","external_id":"u1","name":""# + String(repeating: "x", count: 10_000_000) + #""}"#,
            status: 65, message: "line 1: invalid record: record must be at most"),
        .init(arguments: ["enqueue", "--ndjson", "/nonexistent/file.ndjson"], status: 66, message: "cannot read"),
        .init(arguments: ["drain", "--local", "--sink", "kafka:x"], status: 64, message: "unknown sink"),
        .init(arguments: ["dead", "retry"], status: 64, message: "either --all or one or more record ids"),
        .init(arguments: ["dead", "purge", "12345"], status: 1, message: "not dead letters: 12345"),
        .init(arguments: ["peek", "--limit", "-1"], status: 64, message: "--limit"),
        // Issue 41: identity calls name both sides, once each, and only what Braze takes.
        .init(arguments: ["identify", "--alias", "d:device_id"], status: 64, message: "give --external-id"),
        .init(arguments: ["identify", "--external-id", "U1"], status: 64, message: "give --alias, --email or --phone"),
        .init(
            arguments: ["identify", "--external-id", "U1", "--alias", "d:l", "--email", "a@b.co"], status: 64,
            message: #"two users named: --email "a@b.co" and --alias "d:l""#),
        .init(
            arguments: ["identify", "--external-id", "U1", "--email", "not-an-email"], status: 65,
            message: "identify.email"),
        .init(
            arguments: ["alias", "--external-id", "U1", "--email", "a@b.co"], status: 64, message: "alias takes --alias"
        ),
        .init(
            arguments: ["merge", "--merge-external-id", "u", "--keep-external-id", "u"], status: 65,
            message: "merges the user into itself"),
        .init(
            arguments: ["merge", "--merge-external-id", "u", "--merge-email", "a@b.co", "--keep-external-id", "v"],
            status: 64, message: #"two users named: --merge-external-id "u" and --merge-email "a@b.co""#),
        .init(arguments: ["merge", "--merge-external-id", "u"], status: 64, message: "give one of --keep-external-id"),
        .init(
            arguments: ["enqueue", "--ndjson", "-"], stdin: #"{"type":"merge","external_id":"u","merge":{}}"#,
            status: 65, message: "merge.record"),
    ]

    @Test(arguments: badInvocations)
    func rejectionIsOneClearLineAndChangesNothing(_ invocation: BadInvocation) async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let seed = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: db,
            stdin: #"{"type":"event","external_id":"u1","name":"seed"}"# + "\n"
                + #"{"type":"attribute","external_id":"u2","email":"a@b.co"}"#, in: scratch)
        #expect(seed.status == 0, "\(seed.stderr)")
        let before = try await snapshot(db: db, scratch: scratch)
        let result = try await queuectl(invocation.arguments, db: db, stdin: invocation.stdin, in: scratch)
        #expect(result.status == invocation.status, "stderr: \(result.stderr)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count == 1, "expected one line on stderr, got: \(result.stderr.prefix(500))")
        #expect(result.stderr.contains(invocation.message), "stderr: \(result.stderr.prefix(500))")
        #expect(result.stdout.isEmpty, "nothing on stdout for a rejection: \(result.stdout.prefix(200))")
        #expect(try await snapshot(db: db, scratch: scratch) == before)
    }

    /// A refused enqueue is refused before the queue is opened: at a new path it creates no queue file (nor its
    /// `-wal`, `-shm` or `-turn`), and so no "created queue" notice either.
    @Test(arguments: badInvocations.filter { $0.arguments.first == "enqueue" })
    func aRefusedEnqueueToANewPathCreatesNoFile(_ invocation: BadInvocation) async throws {
        let scratch = Scratch()
        let db = scratch.file("new.db")
        let result = try await queuectl(invocation.arguments, db: db, stdin: invocation.stdin, in: scratch)
        #expect(result.status == invocation.status, "stderr: \(result.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.hasPrefix("new.db") }
        #expect(left.isEmpty, "a refused enqueue left \(left)")
    }

    /// `peek` and `dead list` with nothing to show say so on stderr (stdout stays one line per record), and their
    /// `--json` is still an empty array.
    @Test func emptyListingsSaySoAndTheirJSONIsAnEmptyArray() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try QueueWriter(path: db).close()
        for (arguments, saying) in [(["peek"], "no records pending or leased"), (["dead", "list"], "no dead letters")] {
            let text = try await queuectl(arguments, db: db, in: scratch)
            #expect(text.status == 0 && text.stdout.isEmpty, "\(arguments): \(text.stdout) \(text.stderr)")
            #expect(text.stderr == "queuectl: \(saying)\n", "\(arguments)")
            let json = try await queuectl(arguments + ["--json"], db: db, in: scratch)
            #expect(json.status == 0 && json.stdout == "[]\n" && json.stderr.isEmpty, "\(arguments): \(json)")
        }
    }

    /// Both tools' `--help` give the default queue path as it is resolved (`XDG_STATE_HOME` included), and the
    /// `--key` help (and so the man pages) says keys are per user.
    @Test func helpTextsSayWhatTheCodeDoes() async throws {
        let scratch = Scratch()
        // The help is wrapped to the terminal's width: compare words.
        func words(_ text: String) -> String { text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        for program in [Products.queuectl, Products.queued] {
            let help = words(try await run(program, ["--help"], in: scratch).stdout)
            #expect(help.contains("for root, else ${XDG_STATE_HOME:-~/.local/state}/eventqueue/queue.db"), "\(help)")
        }
        // Issue 42: each help lists its own exit statuses; queued's names POST /forget.
        let queued = words(try await run(Products.queued, ["--help"], in: scratch).stdout)
        #expect(queued.contains("POST /forget") && !queued.contains("`drain`"), "\(queued)")
        let forget = words(try await run(Products.queuectl, ["forget", "--help"], in: scratch).stdout)
        #expect(forget.contains("Exit status: 0 the users are forgotten") && !forget.contains("`drain`"), "\(forget)")
        for kind in ["event", "attribute", "purchase"] {
            let help = words(try await run(Products.queuectl, ["enqueue", kind, "--help"], in: scratch).stdout)
            #expect(help.contains("An idempotency key, per user"), "\(kind): \(help)")
        }
    }

    /// Counts plus every live and dead record, as queuectl reports them.
    func snapshot(db: String, scratch: Scratch) async throws -> String {
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let peek = try await queuectl(["peek", "--json", "--limit", "1000"], db: db, in: scratch)
        let dead = try await queuectl(["dead", "list", "--json"], db: db, in: scratch)
        var counts = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any] ?? [:]
        counts["oldest_pending_age_seconds"] = nil  // time passes between the two snapshots
        return
            "\(counts["pending"] ?? "?")/\(counts["leased"] ?? "?")/\(counts["dead"] ?? "?")\n\(peek.stdout)\(dead.stdout)"
    }

    @Test func enqueuePrintsTheIdAndAnIdempotentRetryPrintsTheSameId() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let arguments = ["enqueue", "event", "opened", "--external-id", "u1", "--key", "push-123"]
        let first = try await queuectl(arguments, db: db, in: scratch)
        let second = try await queuectl(arguments, db: db, in: scratch)
        #expect(first.status == 0 && second.status == 0)
        #expect(first.stdout == "1\n")
        #expect(second.stdout == first.stdout)
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        let records = try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as? [[String: Any]]
        #expect(records?.count == 1)
    }

    /// Issue 22 #8: a name or label holding colons is given with `--alias-name`/`--alias-label` and kept as is;
    /// `--alias NAME:LABEL` with one colon still works.
    @Test func aliasNameAndLabelAreKeptWholeAndTheOldSpellingStillWorks() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let split = try await queuectl(
            ["enqueue", "event", "e", "--alias-name", "urn:x:1", "--alias-label", "crm:eu"], db: db, in: scratch)
        let joined = try await queuectl(
            ["enqueue", "event", "e", "--alias", "device-7:device_id"], db: db, in: scratch)
        #expect(split.status == 0 && joined.status == 0, "\(split.stderr) \(joined.stderr)")
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        let records = try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as? [[String: Any]] ?? []
        let aliases = records.compactMap { ($0["object"] as? [String: Any])?["user_alias"] as? [String: String] }
        #expect(
            aliases == [
                ["alias_name": "urn:x:1", "alias_label": "crm:eu"],
                ["alias_name": "device-7", "alias_label": "device_id"],
            ], "\(peek.stdout)")
    }

    /// Issue 41: `identify`, `alias` and `merge` queue one call each, and NDJSON takes the same calls; `peek` shows
    /// their kinds.
    @Test func identityCallsAreQueuedFromFlagsAndNDJSON() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        for arguments in [
            ["identify", "--external-id", "U1", "--alias", "dev-1:device_id"],
            ["alias", "--external-id", "U1", "--alias-name", "crm:7", "--alias-label", "crm"],
            ["merge", "--merge-email", "old@example.com", "--keep-external-id", "U1"],
        ] {
            let result = try await queuectl(arguments, db: db, in: scratch)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
        }
        let ndjson = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: db,
            stdin: #"{"type":"identify","external_id":"U2","identify":{"phone":"+15555550100"}}"#, in: scratch)
        #expect(ndjson.status == 0, "\(ndjson.stderr)")
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        let records = try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(
            records.compactMap { $0["type"] as? String } == ["identify", "alias", "merge", "identify"], "\(peek.stdout)"
        )
        let merge = records.count > 2 ? records[2]["object"] as? [String: Any] : nil
        #expect(merge?["external_id"] as? String == "U1")
        #expect((merge?["merge"] as? [String: String]) == ["email": "old@example.com"])
    }

    @Test func propValuesAreJSONWhenTheyParseAndStringsOtherwise() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let out = scratch.file("out.jsonl")
        let enqueue = try await queuectl(
            [
                "enqueue", "event", "e", "--external-id", "u1", "--prop", "n=3", "--prop", "b=true", "--prop",
                "s=hello world", "--prop", "q=\"3\"", "--prop", "a=[\"x\"]", "--time", "2026-01-02T03:04:05Z",
            ], db: db, in: scratch)
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 0)
        #expect(drain.stdout.hasPrefix("delivered 1, retried 0, dead 0"))
        let line = try String(contentsOfFile: out, encoding: .utf8)
        #expect(
            line
                == #"{"id":1,"type":"event","object":{"external_id":"u1","name":"e","time":"2026-01-02T03:04:05Z","#
                + #""properties":{"n":3,"b":true,"s":"hello world","q":"3","a":["x"]}}}"# + "\n")
    }

    @Test func drainToStdoutKeepsTheSummaryOffStdout() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        _ = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:-", "--json"], db: db, in: scratch)
        #expect(drain.status == 0)
        #expect(drain.stdout.split(separator: "\n").count == 1)
        #expect(drain.stdout.hasPrefix(#"{"id":1,"type":"event","object":{"external_id":"u1","name":"e","time":"#))
        let summary = try JSONSerialization.jsonObject(with: Data(drain.stderr.utf8)) as? [String: Any]
        #expect(summary?["delivered"] as? Int == 1)
        #expect(summary?["result"] as? String == "all_delivered")
    }

    @Test func statusJSONHasTheDocumentedKeys() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        _ = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        for key in [
            "pending", "leased", "dead", "oldest_pending_age_seconds", "db_bytes", "wal_bytes", "schema_version",
            "remembered_keys", "remembered_key_bytes",
        ] {
            #expect(object[key] != nil, "missing \(key)")
        }
        #expect(object["pending"] as? Int == 1)
        #expect((object["oldest_pending_age_seconds"] as? Double ?? -1) >= 0)
        #expect(object["rate_limit"] is NSNull, "no daemon serves this queue: \(object)")
    }

    @Test func environmentVariableChoosesTheQueue() async throws {
        let scratch = Scratch()
        let db = scratch.file("env.db")
        let enqueue = try await run(
            Products.queuectl, ["enqueue", "event", "e", "--external-id", "u1"], environment: ["EVENTQUEUE_DB": db],
            in: scratch)
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        #expect(FileManager.default.fileExists(atPath: db))
    }

    @Test func newerSchemaIsRefusedWithExit78AndTheFileIsUntouched() async throws {
        let scratch = Scratch()
        let db = scratch.file("future.db")
        let sqlite = try await run(
            "/usr/bin/sqlite3", [db, "PRAGMA user_version = 99; CREATE TABLE t (x);"], in: scratch)
        #expect(sqlite.status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: db))
        let result = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        #expect(result.status == 78)
        #expect(result.stderr.contains("schema version 99"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == before)
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 1)
        #expect(check.stdout.contains("newer than this binary"))
    }

    @Test func checkFindsCorruptionAndForeignFiles() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let seed = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: db,
            stdin: (0..<300).map { #"{"type":"event","external_id":"u\#($0)","name":"e\#($0)"}"# }.joined(
                separator: "\n"), in: scratch)
        #expect(seed.status == 0)
        #expect(try await queuectl(["check"], db: db, in: scratch).status == 0)
        // Overwrite a whole page in the middle of the file (table and index pages live there).
        let size = try FileManager.default.attributesOfItem(atPath: db)[.size] as? UInt64 ?? 0
        #expect(size >= 4096 * 8)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: db))
        try handle.seek(toOffset: size / 4096 / 2 * 4096)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 1, "\(check.stdout)")
        #expect(check.stdout.contains("problem:"))
        #expect(check.stdout.contains("corrupt") || check.stdout.contains("integrity"))

        let foreign = scratch.file("notes.txt")
        try String(repeating: "hello\n", count: 1000).write(toFile: foreign, atomically: true, encoding: .utf8)
        let foreignCheck = try await queuectl(["check"], db: foreign, in: scratch)
        #expect(foreignCheck.status == 1)
        #expect(foreignCheck.stdout.contains("not an SQLite database"))
        let enqueue = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: foreign, in: scratch)
        #expect(enqueue.status == 78)
        #expect(enqueue.stderr.contains("not an EventQueue file"))
        #expect(try String(contentsOfFile: foreign, encoding: .utf8) == String(repeating: "hello\n", count: 1000))
    }

    @Test func missingDirectoryNamesThePathAndWhatToDo() async throws {
        let scratch = Scratch()
        let db = scratch.file("missing/dir/q.db")
        let result = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        #expect(result.status == 73)
        #expect(result.stderr.contains(scratch.file("missing/dir")))
        #expect(result.stderr.contains("does not exist"))
    }

    @Test func deadLettersCanBeListedRetriedAndPurged() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        // A foreign writer's invalid records are dead-lettered at drain time, not sent.
        try QueueWriter(path: db).close()
        for _ in 0..<2 {
            let insert = try await run(
                "/usr/bin/sqlite3",
                [db, #"INSERT INTO records (kind, payload) VALUES ('event', '{"external_id":"u1","name":""}')"#],
                in: scratch)
            #expect(insert.status == 0, "\(insert.stderr)")
        }
        #expect(try await queuectl(["status"], db: db, in: scratch).status == 0)
        _ = try await queuectl(["enqueue", "event", "fine", "--external-id", "u1"], db: db, in: scratch)
        let out = scratch.file("out.jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 10, "some records went dead: \(drain.stdout) \(drain.stderr)")
        let delivered = try DeliveredLine.parse(file: out)
        #expect(delivered.map { $0.object["name"] as? String } == ["fine"])
        let list = try await queuectl(["dead", "list", "--json"], db: db, in: scratch)
        let dead = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(dead.count == 2, "both foreign records are dead letters: \(dead)")
        #expect(
            (dead.first?["last_error"] as? String)?.hasPrefix("rejected before delivery: invalid record: name") == true)
        let ids = dead.compactMap { ($0["id"] as? Int).map(String.init) }
        // Still invalid: retry leaves them dead (a drain would only dead-letter them again) and says why.
        let retry = try await queuectl(["dead", "retry"] + ids, db: db, in: scratch)
        #expect(retry.status == 0 && retry.stdout == "retried 0 dead letters\n")
        #expect(retry.stderr.split(separator: "\n").count == ids.count)
        #expect(retry.stderr.contains("left dead, still invalid: invalid record: name"))
        #expect(try await queuectl(["drain", "--local", "--sink", "null"], db: db, in: scratch).status == 0)
        let purge = try await queuectl(["dead", "purge", "--all"], db: db, in: scratch)
        #expect(purge.stdout == "purged \(ids.count) dead letters\n")
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let counts = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        #expect(counts?["dead"] as? Int == 0 && counts?["pending"] as? Int == 0)
    }
}
