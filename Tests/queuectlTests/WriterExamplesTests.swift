import EventQueue
import Foundation
import Testing
import EventQueueTestSupport

/// Every writer example of docs/WRITERS.md (Examples/), run as an adopter would run it, twice with the same
/// idempotency keys, then drained end to end (`queuectl drain --local --sink jsonl:FILE`): exactly the records
/// written once are delivered.
@Suite struct WriterExamplesTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Examples")

    /// A queue with its schema, as the daemon or queuectl would create it: foreign writers never create one.
    static func makeQueue(_ scratch: Scratch) throws -> String {
        try QueueWriter(path: scratch.queuePath).close()
        return scratch.queuePath
    }

    static func drain(_ db: String, in scratch: Scratch) async throws -> [DeliveredLine] {
        let out = scratch.file("delivered.jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 0, "\(drain.stderr)")
        return try DeliveredLine.parse(file: out)
    }

    @Test func swiftWriter() async throws {
        let scratch = Scratch()
        let db = try Self.makeQueue(scratch)
        let writer = Products.directory.appendingPathComponent("eventqueue-example-writer").path
        let first = try await run(writer, [db, "u1"], in: scratch)
        #expect(first.status == 0, "\(first.stderr)")
        let again = try await run(writer, [db, "u1"], in: scratch)
        #expect(again.stdout == first.stdout, "same keys, same ids")
        let delivered = try await Self.drain(db, in: scratch)
        #expect(delivered.map(\.type) == ["event", "attribute", "purchase"])
        #expect(delivered[0].object["name"] as? String == "checkout_started")
        #expect(delivered[1].object["loyalty_tier"] as? String == "gold")
        #expect(delivered[2].object["product_id"] as? String == "sku-42")
        #expect(delivered.allSatisfy { $0.object["external_id"] as? String == "u1" })
        let missing = try await run(writer, [scratch.file("no/such/dir/q.db"), "u1"], in: scratch)
        #expect(missing.status == 73, "\(missing.stderr)")
    }

    @Test func cWriter() async throws {
        let scratch = Scratch()
        let db = try Self.makeQueue(scratch)
        let binary = scratch.file("eventqueue-writer")
        let source = Self.examples.appendingPathComponent("c/writer.c").path
        let compile = try await run(
            "/bin/sh",
            [
                "-c",
                "compiler=$(command -v cc || command -v clang) && \"$compiler\" -O2 -Wall -Werror -o \"$0\" \"$1\" -lsqlite3",
                binary, source,
            ],
            in: scratch)
        #expect(compile.status == 0, "\(compile.stderr)")
        let first = try await run(binary, [db, "u1", "c_event", "c-1"], in: scratch)
        #expect(first.status == 0 && first.stdout == "enqueued\n", "\(first.stderr)")
        let again = try await run(binary, [db, "u1", "c_event", "c-1"], in: scratch)
        #expect(again.stdout == "already enqueued\n")
        let missing = try await run(binary, [scratch.file("none.db"), "u1", "x", "k"], in: scratch)
        #expect(missing.status == 66)
        let delivered = try await Self.drain(db, in: scratch)
        #expect(delivered.count == 1)
        #expect(delivered.first?.object["name"] as? String == "c_event")
        #expect((delivered.first?.object["properties"] as? [String: Any])?["source"] as? String == "c")
        #expect(delivered.first?.object["time"] is String, "the daemon fills in the time")
    }

    @Test func pythonWriter() async throws {
        let scratch = Scratch()
        let db = try Self.makeQueue(scratch)
        let script = Self.examples.appendingPathComponent("python/writer.py").path
        for _ in 0..<2 {
            let result = try await run("/usr/bin/env", ["python3", script, db, "u1", "py_event", "py-1"], in: scratch)
            #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty, "\(result.stderr)")
        }
        let delivered = try await Self.drain(db, in: scratch)
        #expect(delivered.map { $0.object["name"] as? String } == ["py_event"])
    }

    @Test func shellWriterPrintsNothingAndQuotesItsInput() async throws {
        let scratch = Scratch()
        let db = try Self.makeQueue(scratch)
        let script = Self.examples.appendingPathComponent("shell/writer.sh").path
        let name = #"it's "quoted" $(not run)"#
        for _ in 0..<2 {
            let result = try await run("/bin/sh", [script, db, "O'Brien", name, "sh-1"], in: scratch)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.isEmpty, "no stray value printed: \(result.stdout)")
        }
        let delivered = try await Self.drain(db, in: scratch)
        #expect(delivered.count == 1)
        #expect(delivered.first?.object["name"] as? String == name)
        #expect(delivered.first?.object["external_id"] as? String == "O'Brien")
    }
}
