import EventQueue
import Testing

@testable import EventQueueDelivery

@Suite struct SinkSpecTests {
    @Test func parsesNull() throws {
        let spec = try SinkSpec(parsing: "null")
        #expect(spec == .null)
        #expect(spec.description == "null")
        let sink = try spec.makeSink()
        #expect(sink is NullSink)
        #expect(sink.name == "null")
    }

    @Test(arguments: ["/var/log/events.jsonl", "relative/events.jsonl", "-", "a:b.jsonl", " "])
    func parsesJSONLines(path: String) throws {
        let spec = try SinkSpec(parsing: "jsonl:" + path)
        #expect(spec == .jsonLines(path: path))
        #expect(spec.description == "jsonl:" + path)
        #expect(try SinkSpec(parsing: spec.description) == spec, "the description parses back")
    }

    @Test func jsonLinesToStdoutMakesASinkWithoutOpeningAFile() throws {
        let sink = try SinkSpec(parsing: "jsonl:-").makeSink()
        #expect(sink is JSONLinesSink)
        #expect(sink.name == "jsonl:-")
    }

    @Test(arguments: ["", "jsonl:", "jsonl", "JSONL:/tmp/x", "NULL", "null ", "http://example.com", "file:/tmp/x"])
    func unknownSpecsNameTheValidOnes(text: String) {
        #expect(throws: SinkError.unknownSpec(text)) { try SinkSpec(parsing: text) }
        let message = SinkError.unknownSpec(text).description
        #expect(message == "unknown sink \"\(text)\": use jsonl:PATH (jsonl:- for stdout) or null")
    }

    @Test func cannotOpenNamesTheSpecAndTheReason() {
        let error = SinkError.cannotOpen(spec: "jsonl:/nope/x", reason: "No such file or directory")
        #expect(error.description == "cannot open sink jsonl:/nope/x: No such file or directory")
    }

    @Test func nullSinkDeliversEverythingItIsGiven() async {
        let batch = (1...3).map {
            OutgoingRecord(
                id: Int64($0), kind: .event, object: ["external_id": "u", "name": "e"], userKey: "external_id:u",
                createdAtMilliseconds: 0, attempts: 0)
        }
        let report = await NullSink().deliver(batch)
        #expect(report.outcomes == [1: .delivered, 2: .delivered, 3: .delivered])
        #expect(report.halt == nil)
    }
}
