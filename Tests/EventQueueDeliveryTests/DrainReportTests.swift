@testable import EventQueue
import Testing

@testable import EventQueueDelivery

/// One shape for a pass's summary: what `drain --local --json` prints, what the daemon sends, and what
/// `drain --wait --json` prints after reading the daemon's answer back.
@Suite struct DrainReportTests {
    static func summary(lockHolder: String? = nil, remaining: Bool = true) -> DrainSummary {
        var summary = DrainSummary()
        summary.delivered = 7
        summary.retried = 2
        summary.dead = 1
        summary.batches = 3
        summary.halt = SinkHalt(kind: .unavailable, reason: "HTTP 503")
        if remaining {
            summary.remaining = QueueStats(
                pending: 4, leased: 0, dead: 9, oldestPendingAgeSeconds: nil, nextRetryAtMilliseconds: nil,
                databaseBytes: 0, walBytes: 0, schemaVersion: 1)
        }
        summary.lockHolder = lockHolder.map { DrainLockHolder(owner: $0, expiresAtMilliseconds: 0) }
        return summary
    }

    @Test(arguments: [(nil, true), ("queued pid 12 on host", true), (nil, false)] as [(String?, Bool)])
    func readingTheJSONBackGivesTheSameReport(lockHolder: String?, remaining: Bool) throws {
        let report = DrainReport(Self.summary(lockHolder: lockHolder, remaining: remaining))
        // Through text, as the control socket carries it, with the daemon's extra "event" key.
        var sent: JSONObject = ["event": "summary"]
        for member in report.json { sent[member.key] = member.value }
        let parsed = try #require(try JSONValue.parse(JSONValue.object(sent).serialized).objectValue)
        let back = try DrainReport(json: parsed)
        #expect(back == report)
        #expect(JSONValue.object(back.json).serialized == JSONValue.object(report.json).serialized)
        #expect(back.text == report.text)
    }

    @Test func theLockHolderIsKeptAndShown() throws {
        let report = DrainReport(Self.summary(lockHolder: "queuectl pid 9"))
        #expect(report.json.keys.contains("lock_holder"))
        let back = try DrainReport(json: report.json)
        #expect(back.lockHolder == "queuectl pid 9")
        #expect(back.result == .anotherDrainerRunning)
        #expect(back.text.contains("not run: another drainer holds the lock (queuectl pid 9)"))
    }

    @Test func theKeysAreTheDocumentedOnesInOrder() {
        let report = DrainReport(Self.summary(lockHolder: "x"))
        #expect(
            Array(report.json.keys) == [
                "delivered", "retried", "dead", "batches", "in_flight", "result", "halt", "pending", "leased",
                "dead_total", "lock_holder",
            ])
        #expect(ReportJSON.summary(Self.summary(lockHolder: "x")) == report.json)
    }

    @Test func aSummaryWithoutAResultOrWithAFractionalCountIsRefused() throws {
        var object = DrainReport(Self.summary()).json
        object["result"] = "finished"
        #expect(throws: DrainReport.Malformed.self) { try DrainReport(json: object) }
        object = DrainReport(Self.summary()).json
        object["delivered"] = .number(JSONNumber(text: "1.5")!)
        #expect(throws: DrainReport.Malformed.self) { try DrainReport(json: object) }
        object = DrainReport(Self.summary()).json
        object["halt"] = .number(JSONNumber(3))
        #expect(throws: DrainReport.Malformed.self) { try DrainReport(json: object) }
    }
}
