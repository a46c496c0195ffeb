import Testing

@testable import EventQueueRecords

/// The one rule for cutting NDJSON input into lines, shared by `queuectl enqueue --ndjson` (NDJSONInput) and the
/// fuzz oracle.
@Suite struct NDJSONLineTests {
    @Test func aLineLosesItsCarriageReturnAndNothingElse() {
        #expect(NDJSONLine(bytes: Array("{\"a\":1}\r".utf8)) == .text("{\"a\":1}"))
        #expect(NDJSONLine(bytes: Array(" {}\t".utf8)) == .text(" {}\t"))
        #expect(NDJSONLine(bytes: Array("{}\r\r".utf8)) == .text("{}\r"))
    }

    @Test func spacesAndTabsAloneAreBlankButOtherWhitespaceIsNot() {
        #expect(NDJSONLine(bytes: [UInt8]()) == .blank)
        #expect(NDJSONLine(bytes: Array(" \t \r".utf8)) == .blank)
        #expect(NDJSONLine(bytes: Array("\u{0B}".utf8)) == .text("\u{0B}"))
        #expect(NDJSONLine(bytes: Array("\u{A0}".utf8)) == .text("\u{A0}"))
    }

    @Test func invalidUTF8IsKeptAsBytesWithoutTheLineEnding() {
        #expect(NDJSONLine(bytes: [0x7B, 0xFF, 0x7D, 0x0D]) == .invalidUTF8([0x7B, 0xFF, 0x7D]))
        #expect(NDJSONLine.invalidUTF8Message == "invalid record: record is not valid UTF-8")
    }

    @Test func aDocumentSplitsAtEveryNewlineSoLineNumbersMatchAnEditor() {
        let lines = NDJSONLine.lines(of: Array("{}\r\n\n  \n{\"b\":2}\n".utf8))
        #expect(lines == [.text("{}"), .blank, .blank, .text("{\"b\":2}"), .blank])
        #expect(NDJSONLine.lines(of: Array("{}".utf8)) == [.text("{}")])
    }
}

/// "Fill in `time` when missing": the writer, the consumer and salvage all use this one rule.
@Suite struct FillInTimeTests {
    @Test func eventsAndPurchasesWithoutTimeGetTheEnqueueTime() {
        for kind in [RecordKind.event, .purchase] {
            var object: JSONObject = ["external_id": "u1"]
            RecordEncoder.fillInTime(&object, kind: kind, enqueuedAtMilliseconds: 1_700_000_000_123)
            #expect(object["time"] == "2023-11-14T22:13:20.123Z")
        }
    }

    @Test func aTimeGivenAndAttributesAreLeftAlone() {
        var event: JSONObject = ["time": "2024-05-01T12:00:00Z"]
        RecordEncoder.fillInTime(&event, kind: .event, enqueuedAtMilliseconds: 0)
        #expect(event["time"] == "2024-05-01T12:00:00Z")
        var attributes: JSONObject = ["external_id": "u1", "x": 1]
        RecordEncoder.fillInTime(&attributes, kind: .attribute, enqueuedAtMilliseconds: 0)
        #expect(attributes["time"] == nil)
    }
}
