@testable import EventQueue
import Testing

@testable import EventQueueDelivery

@Suite struct DrainSummaryTests {
    static func stats(pending: Int = 0, leased: Int = 0, dead: Int = 0) -> QueueStats {
        QueueStats(
            pending: pending, leased: leased, dead: dead, oldestPendingAgeSeconds: nil, nextRetryAtMilliseconds: nil,
            databaseBytes: 0, walBytes: 0, schemaVersion: 1)
    }

    static func summary(dead: Int = 0, halt: SinkHalt.Kind? = nil, remaining: QueueStats? = nil) -> DrainSummary {
        var summary = DrainSummary()
        summary.dead = dead
        summary.halt = halt.map { SinkHalt(kind: $0, reason: "test") }
        summary.remaining = remaining
        return summary
    }

    @Test func anEmptyPassDeliveredEverything() {
        #expect(DrainSummary().result == .allDelivered)
        #expect(Self.summary(remaining: Self.stats(dead: 5)).result == .allDelivered, "old dead letters don't count")
    }

    @Test func resultPrecedence() {
        // A misconfigured sink wins over everything: it is what the operator must fix.
        #expect(
            Self.summary(dead: 3, halt: .configuration, remaining: Self.stats(pending: 1)).result == .sinkMisconfigured)
        // Then records dead-lettered in this pass.
        #expect(Self.summary(dead: 1, halt: .unavailable, remaining: Self.stats(pending: 1)).result == .someDead)
        #expect(Self.summary(dead: 1).result == .someDead)
        // Then anything left behind.
        #expect(Self.summary(halt: .unavailable).result == .recordsRemain)
        #expect(Self.summary(remaining: Self.stats(pending: 1)).result == .recordsRemain)
        #expect(Self.summary(remaining: Self.stats(leased: 1)).result == .recordsRemain)
    }

    @Test func optionsDefaults() {
        let options = DrainOptions()
        #expect(options.batchSize == 100)
        #expect(options.leaseMilliseconds == 60_000)
        #expect(options.maxAttempts == 10)
        #expect(options.backoff == Backoff(baseMilliseconds: 1_000, capMilliseconds: 300_000))
        #expect(options.availability.failuresBeforeUnavailable == 3)
        #expect(options.availability.firstProbeDelay == .seconds(5))
        #expect(options.availability.longestProbeDelay == .seconds(60))
        #expect(options.maintenanceAfterPass)
    }

    @Test func optionsAreClampedToWorkableValues() {
        let options = DrainOptions(
            batchSize: 0, leaseMilliseconds: 10, maxAttempts: -1,
            availability: SinkAvailability.Policy(failuresBeforeUnavailable: 0, firstProbeDelay: .zero))
        #expect(options.batchSize == 1)
        #expect(options.leaseMilliseconds == 1_000, "a lease shorter than 1 s could not be renewed in time")
        #expect(options.maxAttempts == 1)
        #expect(options.availability.failuresBeforeUnavailable == 1)
        #expect(options.availability.firstProbeDelay > .zero, "a probe delay of 0 would probe in a loop")
    }

    @Test func reportHelpersGiveEveryRecordTheSameOutcome() {
        let batch = [7, 8, 9].map {
            OutgoingRecord(
                id: $0, kind: .event, object: [:], userKey: "external_id:u", createdAtMilliseconds: 0, attempts: 0)
        }
        let halt = SinkHalt(kind: .unavailable, reason: "HTTP 503")
        let retry = DeliveryOutcome.retry(reason: "HTTP 503", cause: .destination)
        let report = DeliveryReport(retry, for: batch, halt: halt)
        #expect(
            report.outcomes == [
                7: retry, 8: retry, 9: retry,
            ])
        #expect(report.halt == halt)
        #expect(halt.description == "unavailable: HTTP 503")
        #expect(DeliveryReport().outcomes.isEmpty)
    }

    /// The sink's "last error" is the reason of the batch's last record that failed for the destination's sake, not
    /// whichever reason sorts last.
    @Test func settlementKeepsTheLastDestinationFailureOfTheBatch() {
        let batch = [7, 8, 9].map {
            OutgoingRecord(
                id: $0, kind: .event, object: [:], userKey: "external_id:u\($0)", createdAtMilliseconds: 0, attempts: 0)
        }
        let report = DeliveryReport(outcomes: [
            7: .retry(reason: "timeout", cause: .destination), 8: .retry(reason: "HTTP 503", cause: .destination),
            9: .delivered,
        ])
        let settlement = Settlement(records: batch, report: report, cancelled: false)
        #expect(settlement.signal(probe: false) == SinkAvailability.Signal(answered: true, failure: "HTTP 503"))
        #expect(
            Settlement(records: batch, report: DeliveryReport(.delivered, for: batch), cancelled: false)
                .signal(probe: false) == SinkAvailability.Signal(answered: true))
    }
}
