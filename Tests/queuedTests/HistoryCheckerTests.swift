import EventQueueTestSupport
import Foundation
import Testing

/// The checker itself must catch what it claims to catch, and `scripts/check-history` must agree with it.
@Suite struct HistoryCheckerTests {
    typealias Delivery = HistoryChecker.Delivery

    @Test func cleanHistoryPasses() {
        let report = HistoryChecker.check(
            enqueued: ["a", "b", "c"],
            delivered: [
                Delivery(marker: "a", user: "u1", id: 1), Delivery(marker: "b", user: "u2", id: 2),
                Delivery(marker: "c", user: "u1", id: 3),
            ])
        #expect(report.lost.isEmpty && report.duplicated.isEmpty && report.reordered.isEmpty)
        #expect(report.unexpected.isEmpty)
    }

    @Test func findsLostDuplicatedReorderedAndUnexpected() {
        let report = HistoryChecker.check(
            enqueued: ["a", "b", "c", "d"],
            delivered: [
                Delivery(marker: "c", user: "u1", id: 3), Delivery(marker: "a", user: "u1", id: 1),
                Delivery(marker: "c", user: "u1", id: 3), Delivery(marker: "x", user: "u9", id: 9),
                Delivery(marker: "b", user: "u2", id: 2),
            ])
        #expect(report.lost == ["d"])
        #expect(report.duplicated == ["c": 2])
        #expect(report.duplicateDeliveries == 1)
        #expect(report.reordered == ["u1: 1 after 3"])
        #expect(report.unexpected == ["x"])
    }

    /// A writer killed mid-call leaves an attempt without an ok: that record may arrive or not, and is neither
    /// lost nor unexpected; an ok never delivered is lost; a marker nobody attempted is unexpected.
    @Test func attemptedButUnconfirmedRecordsAreIndeterminate() throws {
        let scratch = Scratch()
        let log = scratch.file("w.log")
        try "attempt a\nok a 1\nattempt b,c\nattempt d\nok d 4\nattempt e\nok e 5\nattempt f"
            .write(toFile: log, atomically: true, encoding: .utf8)
        let history = try WriterHistory.read(logs: [log])
        #expect(history.indeterminate == ["b", "c"], "f is an unterminated line: never attempted")
        let report = HistoryChecker.check(
            history,
            delivered: [
                Delivery(marker: "a", user: "u1", id: nil), Delivery(marker: "b", user: "u1", id: nil),
                Delivery(marker: "e", user: "u1", id: nil), Delivery(marker: "f", user: "u1", id: nil),
            ])
        #expect(report.lost == ["d"])
        #expect(report.unexpected == ["f"])
        #expect(Set(report.indeterminate) == ["b", "c"] && report.indeterminateDelivered == 1)
        #expect(report.reordered.isEmpty, "ids come from the ok lines; b has none and is not judged")
        #expect(report.summaryLine == "lost 1, duplicated 0, reordered 0, unexpected 1, indeterminate 2")
    }

    @Test func aMalformedWriterLogIsAnErrorNotASilentPass() throws {
        let scratch = Scratch()
        let log = scratch.file("w.log")
        try "attempt a\nok a 1,2\n".write(toFile: log, atomically: true, encoding: .utf8)
        #expect(throws: ScratchError.self) { try WriterHistory.read(logs: [log]) }
    }

    /// The same files through both: the Swift checker and `scripts/check-history` print the same summary line,
    /// find the same records, and the script's exit status says whether the history is valid.
    @Test func theScriptAgreesWithTheSwiftChecker() async throws {
        let scratch = Scratch()
        let writer = scratch.file("writer.log")
        try """
        attempt a
        ok a 1
        attempt b,c
        ok b,c 2,3
        attempt d
        attempt e
        ok e 5
        attempt f
        ok f 6
        attempt g
        ok g 7
        attempt h
        """.write(toFile: writer, atomically: true, encoding: .utf8)
        func object(_ marker: String, _ user: String, attribute: Bool = false) -> String {
            attribute
                ? #"{"external_id":"\#(user)","marker":"\#(marker)"}"#
                : #"{"external_id":"\#(user)","name":"x","properties":{"marker":"\#(marker)"}}"#
        }
        let braze = scratch.file("received.ndjson")
        let received = [
            (true, object("a", "u1")), (true, object("c", "u1")), (true, object("b", "u1")),
            (true, object("d", "u2", attribute: true)), (true, object("c", "u1")), (false, object("f", "u1")),
            (true, object("zz", "u3")), (true, object("g", "u2", attribute: true)),
        ]
        try received.enumerated().map { index, entry in
            #"{"accepted":\#(entry.0),"array":"events","index":\#(index),"request":1,"object":\#(entry.1)}"#
        }.joined(separator: "\n").appending("\n").write(toFile: braze, atomically: true, encoding: .utf8)

        let report = HistoryChecker.check(
            try WriterHistory.read(logs: [writer]), delivered: try SinkHistory.brazeReceived(braze))
        #expect(report.summaryLine == "lost 2, duplicated 1, reordered 1, unexpected 1, indeterminate 1")
        #expect(Set(report.lost) == ["e", "f"] && report.unexpected == ["zz"] && report.indeterminate == ["d"])
        #expect(report.reordered == ["external_id:u1: 2 after 3"])
        let script = try await Storm.runScript(logs: [writer], braze: [braze], scratch: scratch)
        #expect(script.status == 1)
        #expect(script.summary == report.summaryLine)
        #expect(Set(script.report["lost"] as? [String] ?? []) == Set(report.lost))
        #expect(script.report["reordered"] as? [String] == report.reordered)

        // A valid history through the JSONL sink: exit 0, and the same line again.
        let jsonl = scratch.file("delivered.jsonl")
        try [
            (1, "a", "u1"), (2, "b", "u1"), (3, "c", "u1"), (2, "b", "u1"), (5, "e", "u2"), (6, "f", "u2"),
            (7, "g", "u1"),
        ]
        .map { #"{"id":\#($0.0),"type":"event","object":\#(object($0.1, $0.2))}"# }
        .joined(separator: "\n").appending("\n").write(toFile: jsonl, atomically: true, encoding: .utf8)
        let clean = HistoryChecker.check(
            try WriterHistory.read(logs: [writer]), delivered: try SinkHistory.jsonl(jsonl))
        #expect(clean.summaryLine == "lost 0, duplicated 1, reordered 0, unexpected 0, indeterminate 1")
        let cleanScript = try await Storm.runScript(logs: [writer], jsonl: [jsonl], scratch: scratch)
        #expect(cleanScript.status == 0)
        #expect(cleanScript.summary == clean.summaryLine)
    }
}
