import EventQueue
import Glibc
import Testing

@testable import EventQueueDelivery

@Suite struct JSONLinesSinkTests {
    let directory = Scratch()

    func record(_ id: Int64, _ kind: RecordKind, _ json: String) throws -> OutgoingRecord {
        let object = try #require(try JSONValue.parse(json).objectValue)
        return OutgoingRecord(
            id: id, kind: kind, object: object, userKey: "external_id:u1", createdAtMilliseconds: 0, attempts: 0)
    }

    func contents(_ path: String) throws -> String {
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0, "cannot read \(path)")
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            try #require(count >= 0)
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }

    /// The process umask, read without changing it (tests run in parallel, and umask is process-wide).
    func umask() throws -> mode_t {
        let status = try contents("/proc/self/status")
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") })
        let digits = line.dropFirst("Umask:".count).trimmingPrefix(while: \.isWhitespace)
        return try #require(mode_t(digits, radix: 8))
    }

    @Test func writesOneExactLinePerRecord() async throws {
        let path = directory.file("events.jsonl")
        let sink = try JSONLinesSink(path: path)
        #expect(sink.name == "jsonl:" + path)
        let batch = [
            try record(
                1, .event,
                #"{"external_id":"u1","name":"played","time":"2026-11-22T04:17:10.123Z","properties":{"title":"say \"hi\"\nbye","emoji":"é👍","n":1.50}}"#
            ),
            try record(2, .attribute, #"{"external_id":"u1","country":"FR","dob":null}"#),
            try record(
                3, .purchase,
                #"{"external_id":"u2","product_id":"sku","currency":"EUR","price":9.99,"quantity":2,"time":"2026-11-22T04:17:11.000Z"}"#
            ),
        ]
        let report = await sink.deliver(batch)
        #expect(report.outcomes == [1: .delivered, 2: .delivered, 3: .delivered])
        #expect(report.halt == nil)
        let expected = """
            {"id":1,"type":"event","object":{"external_id":"u1","name":"played","time":"2026-11-22T04:17:10.123Z","properties":{"title":"say \\"hi\\"\\nbye","emoji":"é👍","n":1.50}}}
            {"id":2,"type":"attribute","object":{"external_id":"u1","country":"FR","dob":null}}
            {"id":3,"type":"purchase","object":{"external_id":"u2","product_id":"sku","currency":"EUR","price":9.99,"quantity":2,"time":"2026-11-22T04:17:11.000Z"}}

            """
        #expect(try contents(path) == expected)
    }

    @Test func appendsAcrossBatchesAndAcrossOpens() async throws {
        let path = directory.file("events.jsonl")
        let first = try JSONLinesSink(path: path)
        _ = await first.deliver([try record(1, .event, #"{"external_id":"u1","name":"a"}"#)])
        _ = await first.deliver([
            try record(2, .event, #"{"external_id":"u1","name":"b"}"#),
            try record(3, .event, #"{"external_id":"u1","name":"c"}"#),
        ])
        let reopened = try JSONLinesSink(path: path)
        _ = await reopened.deliver([try record(4, .attribute, #"{"external_id":"u1","x":1}"#)])
        #expect(
            try contents(path) == """
                {"id":1,"type":"event","object":{"external_id":"u1","name":"a"}}
                {"id":2,"type":"event","object":{"external_id":"u1","name":"b"}}
                {"id":3,"type":"event","object":{"external_id":"u1","name":"c"}}
                {"id":4,"type":"attribute","object":{"external_id":"u1","x":1}}

                """)
    }

    @Test func anEmptyBatchWritesNothing() async throws {
        let path = directory.file("events.jsonl")
        let report = try await JSONLinesSink(path: path).deliver([])
        #expect(report.outcomes.isEmpty)
        #expect(try contents(path).isEmpty)
    }

    @Test func theFileIsCreatedOwnerWriteGroupRead() throws {
        let path = directory.file("events.jsonl")
        _ = try JSONLinesSink(path: path)
        let expected: mode_t = 0o640 & ~(try umask())
        #expect(mode(path) == expected, "mode \(String(mode(path) ?? 0, radix: 8))")
        #expect((mode(path) ?? 0o777) & 0o137 == 0, "never group-writable, executable or world-readable")
    }

    @Test func anUnopenablePathFailsAtInitNamingThePath() throws {
        let missing = directory.file("no-such-directory/events.jsonl")
        #expect(throws: SinkError.cannotOpen(spec: "jsonl:" + missing, reason: "No such file or directory")) {
            try JSONLinesSink(path: missing)
        }
        let aDirectory = directory.path
        #expect(throws: SinkError.cannotOpen(spec: "jsonl:" + aDirectory, reason: "Is a directory")) {
            try JSONLinesSink(path: aDirectory)
        }
        do {
            _ = try SinkSpec.jsonLines(path: missing).makeSink()
            Issue.record("opening \(missing) succeeded")
        } catch {
            #expect(error.description.contains(missing))
            #expect(error.description.hasPrefix("cannot open sink jsonl:"))
        }
    }

    @Test func aFailedWriteAsksForARetryOfTheWholeBatch() async throws {
        // /dev/full opens fine and fails every write with ENOSPC.
        let sink = try JSONLinesSink(path: "/dev/full")
        let report = await sink.deliver([
            try record(1, .event, #"{"external_id":"u1","name":"a"}"#),
            try record(2, .event, #"{"external_id":"u1","name":"b"}"#),
        ])
        // The host's problem, not the records': no attempt is counted, and the pass stops (issue 22 #3).
        let reason = "jsonl:/dev/full: write failed: No space left on device"
        let retry = DeliveryOutcome.retry(reason: reason, cause: .destination)
        #expect(report.outcomes == [1: retry, 2: retry])
        #expect(report.halt?.kind == .unavailable)
        #expect(report.halt?.reason.hasPrefix(reason) == true, "\(String(describing: report.halt))")
    }

    @Test func drainingIntoAFileWritesTheStoredPayloadsInOrder() async throws {
        let queue = directory.queuePath
        let output = directory.file("out.jsonl")
        try enqueue(
            [
                testEvent("a", user: "u1"),
                Record.attribute("country", "FR", user: .externalID("u2")),
                Record.purchase(productID: "sku", currency: "EUR", price: JSONNumber(3), user: .externalID("u1")),
                testEvent("b", user: "u2"),
            ], at: queue)
        let stored = try inspect(queue) { try $0.admin.peek(limit: 10) }
        let sink = try JSONLinesSink(path: output)
        let summary = try await drainOnce(try makeDrainer(queue, sink: sink, options: DrainOptions(batchSize: 3)))
        #expect(summary.delivered == 4)
        #expect(summary.result == .allDelivered)
        let expected = stored.map { #"{"id":\#($0.id),"type":"\#($0.kind.rawValue)","object":\#($0.payload)}"# + "\n" }
        #expect(try contents(output) == expected.joined(), "what the writer stored is what the file gets")
        #expect(try liveRecords(queue).isEmpty)
    }
}
