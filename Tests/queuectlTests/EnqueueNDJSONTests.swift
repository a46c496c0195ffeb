import Foundation
import Testing
import EventQueueTestSupport

/// `enqueue --ndjson` streaming and `--dead-letter-invalid`, the enqueue messages of issues 11 and 13, and what
/// `dead retry` does with a dead letter that is still invalid.
@Suite struct EnqueueNDJSONTests {
    static let good = #"{"type":"event","external_id":"u1","name":"ok"}"#
    static let numericTime = #"{"type":"event","external_id":"u1","name":"old","time":1700000000}"#

    @Test func deadLetterInvalidSetsBadLinesAsideWithTheirLineNumber() async throws {
        let scratch = Scratch()
        let db = scratch.queuePath
        let input = [Self.good, Self.numericTime, "", Self.good.replacingOccurrences(of: "ok", with: "ok2")]
            .joined(separator: "\n")
        let refused = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: input, in: scratch)
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("line 2: invalid record: time"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: db), "all or nothing by default: not even the queue file")

        let kept = try await queuectl(
            ["enqueue", "--ndjson", "-", "--dead-letter-invalid"], db: db, stdin: input, in: scratch)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(kept.stdout.split(separator: "\n").count == 3)
        #expect(kept.stderr.contains("set aside as dead letter") && kept.stderr.contains("line 2:"))
        let dead = try await queuectl(["dead", "list", "--json"], db: db, in: scratch)
        let list = try JSONSerialization.jsonObject(with: Data(dead.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(list.count == 1)
        #expect((list.first?["last_error"] as? String)?.hasPrefix("line 2: invalid record: time") == true)

        // Retrying a dead letter that is still invalid leaves it dead and says why; once fixed, it goes out.
        let retry = try await queuectl(["dead", "retry", "--all"], db: db, in: scratch)
        #expect(retry.status == 0)
        #expect(retry.stdout == "retried 0 dead letters\n")
        #expect(retry.stderr.contains("left dead, still invalid") && retry.stderr.contains("time"))
        let id = (list.first?["id"] as? Int) ?? 0
        let fix = try await run(
            "/usr/bin/sqlite3",
            [db, "UPDATE records SET payload = json_set(payload, '$.time', '2023-11-14T22:13:20Z') WHERE id = \(id)"],
            in: scratch)
        #expect(fix.status == 0, "\(fix.stderr)")
        let retried = try await queuectl(["dead", "retry", String(id)], db: db, in: scratch)
        #expect(retried.stdout == "retried 1 dead letters\n")
        let out = scratch.file("out.jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 0, "\(drain.stderr)")
        #expect(try DeliveredLine.parse(file: out).map { $0.object["name"] as? String } == ["ok", "old", "ok2"])
    }

    @Test func aLineThatNamesNoUserStillRefusesTheFile() async throws {
        let scratch = Scratch()
        let result = try await queuectl(
            ["enqueue", "--ndjson", "-", "--dead-letter-invalid"], db: scratch.queuePath,
            stdin: Self.good + "\n" + #"{"type":"event","name":"x"}"#, in: scratch)
        #expect(result.status == 65)
        #expect(result.stderr.contains("line 2") && result.stderr.contains("cannot be kept as a dead letter"))
    }

    @Test func anOverLongLineStopsTheReadAtOnce() async throws {
        let scratch = Scratch()
        // /dev/zero never ends: the read must stop at the first 256 KiB line, not exhaust memory or time.
        let result = try await queuectl(["enqueue", "--ndjson", "/dev/zero"], db: scratch.queuePath, in: scratch)
        #expect(result.status == 65)
        #expect(result.stderr.contains("line 1: invalid record: record must be at most 262144 bytes"))
        let piped = try await run(
            "/bin/sh",
            ["-c", "head -c 1000000 /dev/zero | \(Products.queuectl) enqueue --ndjson - --db \(scratch.queuePath)"],
            in: scratch)
        #expect(piped.status == 65)
        #expect(piped.stderr.contains("line 1: invalid record: record must be at most"))
    }

    @Test func streamsAFileLargerThanOneReadBuffer() async throws {
        let scratch = Scratch()
        let path = scratch.file("in.ndjson")
        let lines = (0..<5000).map { #"{"type":"event","external_id":"u\#($0 % 7)","name":"n\#($0)"}"# }
        try Data((lines.joined(separator: "\r\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let result = try await queuectl(["enqueue", "--ndjson", path], db: scratch.queuePath, in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        let ids = result.stdout.split(separator: "\n").compactMap { Int($0) }
        #expect(ids == Array(1...5000))
        let piped = try await run(
            "/bin/sh", ["-c", "cat \(path) | \(Products.queuectl) enqueue --ndjson - --db \(scratch.queuePath)"],
            in: scratch)
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout.split(separator: "\n").count == 5000)
    }

    /// The check pass keeps what it encoded within a budget; past it, the write pass reads the rest of the input
    /// again from the first line it did not keep: every line once, in order, the dead letters in their places.
    @Test(arguments: ["0", "600", "100000000"])
    func linesPastTheCheckPassBudgetAreReadAgain(_ budget: String) async throws {
        let scratch = Scratch()
        let path = scratch.file("in.ndjson")
        var lines = (0..<40).map { #"{"type":"event","external_id":"u\#($0 % 3)","name":"n\#($0)"}"# }
        lines[5] = Self.numericTime
        lines[30] = Self.numericTime
        let keyed = [10, 35].map {
            #"{"type":"event","external_id":"k","name":"n\#($0)","idempotency_key":"key-\#($0)"}"#
        }
        (lines[10], lines[35]) = (keyed[0], keyed[1])
        lines.insert("", at: 20)
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let result = try await queuectl(
            ["enqueue", "--ndjson", path, "--dead-letter-invalid"], db: scratch.queuePath,
            environment: ["EVENTQUEUE_TEST_NDJSON_KEPT_BYTES": budget], in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").compactMap { Int($0) } == Array(1...40))
        #expect(result.stderr.contains("line 6:") && result.stderr.contains("line 32:"), "\(result.stderr)")
        let out = scratch.file("out.jsonl")
        let drain = try await queuectl(
            ["drain", "--local", "--sink", "jsonl:\(out)"], db: scratch.queuePath, in: scratch)
        #expect(drain.status == 0, "\(drain.stderr)")
        let names = (0..<40).filter { $0 != 5 && $0 != 30 }.map { "n\($0)" }
        #expect(try DeliveredLine.parse(file: out).map { $0.object["name"] as? String } == names)
        // The keys were stored with the kept records as with the reread ones: the same lines again write nothing.
        let again = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: scratch.queuePath, stdin: keyed.joined(separator: "\n"),
            environment: ["EVENTQUEUE_TEST_NDJSON_KEPT_BYTES": budget], in: scratch)
        #expect(again.stdout == "11\n36\n", "\(again.stderr)")
    }

    struct Refusal: CustomTestStringConvertible, Sendable {
        var arguments: [String]
        var status: Int32
        var message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    @Test(arguments: [
        Refusal(
            arguments: ["enqueue", "bogus", "x", "--external-id", "u1"], status: 64,
            message: "unknown record kind \"bogus\""),
        Refusal(
            arguments: ["enqueue", "--ndjson", "/dev/null", "event", "x", "--external-id", "u1"], status: 64,
            message: "--ndjson (and --dead-letter-invalid) cannot be combined"),
        Refusal(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--prop", "a=1", "--prop", "a=2"], status: 64,
            message: "--prop a is given more than once"),
        Refusal(
            arguments: ["enqueue", "event", "e", "--external-id", "u1", "--properties", #"{"a":1,"a":2}"#],
            status: 64, message: "duplicate key"),
    ])
    func enqueueMessages(_ refusal: Refusal) async throws {
        let scratch = Scratch()
        let result = try await queuectl(refusal.arguments, db: scratch.queuePath, in: scratch)
        #expect(result.status == refusal.status, "\(result.stderr)")
        #expect(result.stderr.contains(refusal.message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }
}
