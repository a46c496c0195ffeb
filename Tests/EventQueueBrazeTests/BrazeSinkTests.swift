import EventQueue
import EventQueueDelivery
import FakeBraze
import Foundation
import Logging
import Testing

@testable import EventQueueBraze

/// The sink against a real in-process `FakeBrazeServer`, over real HTTP on 127.0.0.1.
@Suite struct BrazeSinkTests {
    @Test func accepted201DeliversEverythingAndBrazeReceivesExactlyTheObjects() async throws {
        let records = distinctEvents(100)
        let (report, received, stats) = try await withSink { server, sink in
            (await sink.deliver(records), server.received(), server.stats())
        }
        #expect(report.halt == nil)
        #expect(report.outcomes.count == 100)
        #expect(report.outcomes.values.allSatisfy { $0 == .delivered })
        #expect(stats.requests == 2)
        #expect(stats.byStatus == [201: 2])
        #expect(received.map(\.json) == records.map { canonical($0.object) })
        #expect(received.map(\.request) == Array(repeating: 1, count: 75) + Array(repeating: 2, count: 25))
        #expect(received.allSatisfy { $0.accepted })
    }

    /// Issue 40 #4: a request of a delivery whose lease has ended (a drainer resumed after a SIGSTOP past it) is
    /// not sent: Braze may have deleted the user meanwhile. One that times out is noted unanswered on the lease, so
    /// the users' erasures wait (`InFlightLeases`).
    @Test func noRequestGoesAfterTheDeliverysLeaseEnded() async throws {
        let records = distinctEvents(3)
        let ended = DeliveryLease(consumer: "here:1:a", end: .now - .seconds(1))
        let (report, stats) = try await withSink { server, sink in
            let report = await DeliveryLease.$current.withValue(ended) { await sink.deliver(records) }
            return (report, server.stats())
        }
        #expect(stats.requests == 0, "sent after the lease ended: \(stats)")
        #expect(report.outcomes.values.allSatisfy { if case .retry = $0 { true } else { false } }, "\(report)")
        var faults = FakeBrazeFaults()
        faults.hangRate = 1
        let live = DeliveryLease(consumer: "here:1:a", end: .now + .seconds(60))
        let timedOut = try await withSink(faults: faults, requestTimeout: .milliseconds(500)) { _, sink in
            await DeliveryLease.$current.withValue(live) { await sink.deliver(records) }
        }
        #expect(timedOut.outcomes.values.allSatisfy { $0 != .delivered })
        #expect(live.hadUnansweredRequest)
    }

    @Test func mixedKindsArriveInTheirArraysInIdOrder() async throws {
        // a's purchase (3) then a's event (6) would be applied backwards in one request: 6 goes in a second one.
        let records = [
            attribute(1, user: "a"), event(2, user: "a"), purchase(3, user: "a"), event(4, user: "b"),
            attribute(5, user: "c"), event(6, user: "a"),
        ]
        let received = try await withSink { server, sink in
            let report = await sink.deliver(records)
            #expect(report.outcomes.count == 6)
            #expect(report.outcomes.values.allSatisfy { $0 == .delivered })
            return server.received()
        }
        let expected: [(array: String, id: Int64, request: Int)] = [
            ("attributes", 1, 1), ("attributes", 5, 1), ("events", 2, 1), ("events", 4, 1), ("purchases", 3, 1),
            ("events", 6, 2),
        ]
        #expect(received.map(\.array) == expected.map(\.array))
        #expect(received.map(\.request) == expected.map(\.request))
        #expect(received.map(\.json) == expected.map { canonical(records[Int($0.id) - 1].object) })
    }

    @Test func errorsArrayRejectsExactlyTheNamedRecords() async throws {
        var faults = FakeBrazeFaults()
        faults.rejectMarker = "REJECT-ME"
        var records = distinctEvents(30)
        records[4] = event(5, user: "user-5", name: "REJECT-ME")
        records[21] = event(22, user: "user-22", properties: ["tier": "REJECT-ME"])
        let report = try await withSink(faults: faults) { _, sink in await sink.deliver(records) }
        let reason = "Braze rejected it: fake-braze: refused by the reject marker"
        #expect(report.outcomes[5] == .rejected(reason: reason))
        #expect(report.outcomes[22] == .rejected(reason: reason))
        #expect(report.outcomes.filter { $0.value == .delivered }.count == 28)
        #expect(report.halt == nil)
    }

    @Test func errorsArrayIndexesPointIntoTheRightArray() async throws {
        // Braze's index is the position within the named array, not within the request.
        var faults = FakeBrazeFaults()
        faults.rejectMarker = "REJECT-ME"
        let records = [
            event(1, user: "a"), attribute(2, user: "b"), event(3, user: "c", name: "REJECT-ME"),
            attribute(4, user: "d"),
        ]
        let report = try await withSink(faults: faults) { _, sink in await sink.deliver(records) }
        #expect(report.outcomes[3] == .rejected(reason: "Braze rejected it: fake-braze: refused by the reject marker"))
        #expect([1, 2, 4].allSatisfy { report.outcomes[$0] == .delivered })
    }

    @Test func badRequestIsBisectedToThePoisonRecord() async throws {
        var faults = FakeBrazeFaults()
        faults.poisonMarker = "POISON-PILL"
        var records = distinctEvents(40)
        records[16] = event(17, user: "user-17", properties: ["note": "POISON-PILL"])
        let (report, stats, received) = try await withSink(faults: faults) { server, sink in
            (await sink.deliver(records), server.stats(), server.received())
        }
        #expect(
            report.outcomes[17] == .rejected(reason: "Braze rejected it: 400 fake-braze: poison marker in the request"))
        #expect(report.outcomes.filter { $0.value == .delivered }.count == 39)
        // 1 full request, then at each of ⌈log2 40⌉ = 6 levels one good half and one bad half.
        #expect(stats.requests <= 2 * 6 + 2)
        // Exactly: 40 → 20 | 20 → 10 | 10 → 5 | 5 → 2 | 3 → 1 | 1: six 400s and five 201s.
        #expect(stats.requests == 11)
        #expect(stats.byStatus == [400: 6, 201: 5])
        #expect(Set(received.map(\.json)) == Set(records.filter { $0.id != 17 }.map { canonical($0.object) }))
        #expect(received.count == 39)
    }

    /// Issue 40 #2: a record that makes Braze answer 503 every time, while Braze answers other requests, is
    /// bisected out of its request: its batch-mates are delivered, and it alone is retried as its own failure
    /// (counting an attempt, so it dies after --max-attempts). Before, the whole batch was retried with no attempt,
    /// for as long as the max age.
    @Test func aRecordBrazeFails5xxForWhileAnsweringOthersIsSplitOutAndCountsAnAttempt() async throws {
        var faults = FakeBrazeFaults()
        faults.serverErrorMarker = "FAILS-EVERY-TIME"
        var records = distinctEvents(40)
        records[16] = event(17, user: "user-17", properties: ["note": "FAILS-EVERY-TIME"])
        let (first, report, stats) = try await withSink(faults: faults) { server, sink in
            // Another batch answered first: Braze is up.
            let first = await sink.deliver((41...45).map { event(Int64($0), user: "other-\($0)") })
            return (first, await sink.deliver(records), server.stats())
        }
        #expect(first.outcomes.values.allSatisfy { $0 == .delivered })
        guard case .retry(let reason, _, .record)? = report.outcomes[17] else {
            Issue.record("the failing record: \(String(describing: report.outcomes[17]))")
            return
        }
        #expect(reason.contains("503"), "\(reason)")
        #expect(report.outcomes.filter { $0.value == .delivered }.count == 39)
        #expect(stats.byStatus[503] == 6 && stats.requests <= 1 + 2 * 6 + 1, "\(stats.byStatus)")
    }

    /// An outage (every request fails, nothing answered) still costs no attempt and splits nothing.
    @Test func anOutageStillCostsNoAttemptAndSplitsNothing() async throws {
        var faults = FakeBrazeFaults()
        faults.serverErrorRate = 1
        let report = try await withSink(faults: faults) { _, sink in await sink.deliver(distinctEvents(40)) }
        #expect(report.outcomes.count == 40)
        #expect(
            report.outcomes.values.allSatisfy {
                if case .retry(_, _, .destination) = $0 { return true }
                return false
            })
    }

    @Test func unauthorizedHaltsWithNoOutcomesForUndelivered() async throws {
        let report = try await withSink(serverKey: "another-key") { _, sink in await sink.deliver(distinctEvents(10)) }
        #expect(report.outcomes.isEmpty)
        #expect(report.halt?.kind == .configuration)
        #expect(report.halt?.reason.contains("401") == true)
        #expect(report.halt?.reason.contains("check the API key / instance URL") == true)
    }

    @Test func keyRevokedMidBatchKeepsWhatWasDelivered() async throws {
        var faults = FakeBrazeFaults()
        faults.unauthorizedAfterRequests = 1
        let report = try await withSink(faults: faults) { _, sink in await sink.deliver(distinctEvents(200)) }
        #expect(report.halt?.kind == .configuration)
        #expect(report.outcomes.count == 75)
        #expect((1...75).allSatisfy { report.outcomes[Int64($0)] == .delivered })
    }

    @Test func rateLimitWaitsForTheResetThenSendsTheSameRequestAgain() async throws {
        var faults = FakeBrazeFaults()
        faults.rateLimitNextRequests = 1
        faults.rateLimitResetAfterSeconds = 1
        let start = ContinuousClock.now
        let (report, stats) = try await withSink(faults: faults) { server, sink in
            (await sink.deliver(distinctEvents(100)), server.stats())
        }
        let elapsed = ContinuousClock.now - start
        #expect(report.halt == nil)
        #expect((1...100).allSatisfy { report.outcomes[Int64($0)] == .delivered }, "\(report)")
        #expect(
            stats.byStatus[429] == 1 && stats.byStatus[201] == 2, "the 429'd request again, then the rest: \(stats)")
        // The reset is a whole second within 1 s; the floor of a first round is 100 ms.
        #expect(elapsed >= .milliseconds(BrazeRatePolicy.pauseFloor) && elapsed < .seconds(3), "\(elapsed)")
    }

    /// Records near the size limits: a full claim of 75 bulky attributes goes as two requests under 4 MB, never
    /// as one that Braze answers 413 (which bisection would then have to split, one request more each time).
    @Test func bulkyRecordsNeverMakeABodyOver4MB() async throws {
        let records = (1...75).map { bulkyAttribute(Int64($0), user: "u\($0)") }
        let (report, stats) = try await withSink { server, sink in (await sink.deliver(records), server.stats()) }
        #expect((1...75).allSatisfy { report.outcomes[Int64($0)] == .delivered }, "\(report.outcomes.count)")
        #expect(stats.byStatus[413] == nil, "\(stats)")
        #expect(stats.requests == 2)
    }

    @Test func retryAfterHeaderWinsOverTheReset() async throws {
        var faults = FakeBrazeFaults()
        faults.rateLimitNextRequests = 1
        faults.retryAfterSeconds = 1
        faults.rateLimitResetAfterSeconds = 30
        let start = ContinuousClock.now
        let report = try await withSink(faults: faults) { _, sink in await sink.deliver(distinctEvents(3)) }
        let elapsed = ContinuousClock.now - start
        #expect(report.outcomes[1] == .delivered)
        #expect(
            elapsed >= .milliseconds(1_000) && elapsed < .seconds(5), "Retry-After 1 s, not the 30 s reset: \(elapsed)")
    }

    @Test func aServerErrorCostsNoAttemptAndStopsTheBatch() async throws {
        var faults = FakeBrazeFaults()
        faults.serverErrorRate = 1
        let (report, stats) = try await withSink(faults: faults) { server, sink in
            (await sink.deliver(distinctEvents(100)), server.stats())
        }
        #expect(stats.requests == 1)
        #expect((1...75).allSatisfy { report.outcomes[Int64($0)].isRetry(cause: .destination) })
        #expect((76...100).allSatisfy { report.outcomes[Int64($0)].isRetry(cause: .destination) })
        #expect(report.halt == nil)
    }

    @Test func slowAnswerBeyondTheTimeoutIsRetried() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 3000
        // Timed around deliver alone: stopping the fake waits for its delayed answer. The outcome is the real
        // proof (without the deadline the fake's late 201 would make every record delivered); the duration
        // shows the deadline, not the answer, ended the request.
        let (report, elapsed) = try await withSink(faults: faults, requestTimeout: .milliseconds(300)) { _, sink in
            let started = ContinuousClock.now
            let report = await sink.deliver(distinctEvents(5))
            return (report, ContinuousClock.now - started)
        }
        #expect(elapsed < .seconds(3), "deliver took \(elapsed)")
        #expect((1...5).allSatisfy { report.outcomes[Int64($0)].isRetry(cause: .destination) })
        if case .retry(let reason, _, _) = report.outcomes[1] { #expect(reason.contains("timed out")) }
    }

    @Test func droppedConnectionIsRetried() async throws {
        var faults = FakeBrazeFaults()
        faults.dropConnectionRate = 1
        let (report, stats) = try await withSink(faults: faults) { server, sink in
            (await sink.deliver(distinctEvents(5)), server.stats())
        }
        #expect(stats.dropped >= 1)
        #expect((1...5).allSatisfy { report.outcomes[Int64($0)].isRetry(cause: .destination) })
    }

    @Test func responseCutOffHalfWayIsRetried() async throws {
        var faults = FakeBrazeFaults()
        faults.resetMidResponseRate = 1
        let (report, stats) = try await withSink(faults: faults) { server, sink in
            (await sink.deliver(distinctEvents(5)), server.stats())
        }
        #expect(stats.resetMidResponse >= 1)
        #expect((1...5).allSatisfy { report.outcomes[Int64($0)].isRetry(cause: .destination) })
    }

    @Test func aUsersLaterRecordsWaitForItsRetriedRecord() async throws {
        // Request 1 = [a:event, b:event], request 2 = [a:attribute] (an attribute after a's event). Request 1
        // fails, so a's attribute must not be sent and must say why.
        var faults = FakeBrazeFaults()
        faults.serverErrorRate = 1
        let records = [event(1, user: "a"), event(2, user: "b"), attribute(3, user: "a"), attribute(4, user: "c")]
        let (report, stats) = try await withSink(faults: faults) { server, sink in
            (await sink.deliver(records), server.stats())
        }
        #expect(stats.requests == 1)
        #expect(report.outcomes[3] == .retry(reason: BrazeBatchDelivery.waitingReason, cause: .destination))
        #expect(report.outcomes[4].isRetry(cause: .destination))
    }

    @Test func combinedLimitIsHonoured() async throws {
        var faults = FakeBrazeFaults()
        faults.maxObjectsPerRequest = 50
        let (report, stats) = try await withSink(faults: faults, maxObjectsPerRequest: 50) { server, sink in
            (await sink.deliver(distinctEvents(120)), server.stats())
        }
        #expect(report.outcomes.values.allSatisfy { $0 == .delivered })
        #expect(stats.byStatus == [201: 3])
    }

    @Test func invalidBaseURLHaltsWithoutTouchingRecords() async throws {
        let sink = BrazeSink(baseURL: "rest.iad-01.braze.com", apiKey: try BrazeAPIKey(testKey), logger: quietLogger)
        let report = await sink.deliver(distinctEvents(3))
        await sink.shutdown()
        #expect(report.outcomes.isEmpty)
        #expect(report.halt?.kind == .configuration)
        #expect(throws: BrazeConfigurationError.invalidBaseURL("ftp://x")) {
            try BrazeSink.validate(baseURL: "ftp://x")
        }
        #expect(sink.name == "braze:rest.iad-01.braze.com")
    }

    @Test func theKeyNeverAppearsInLogsOrDescriptions() async throws {
        let lines = Locked<[String]>([])
        var logger = Logger(label: "braze.capture") { _ in CapturingLogHandler(lines: lines) }
        logger.logLevel = .trace
        var records = distinctEvents(10)
        records[3] = event(4, user: "user-4", properties: ["note": "POISON-PILL"])
        var faults = FakeBrazeFaults()
        faults.poisonMarker = "POISON-PILL"
        // Success, a bisected 400, then a 500 and a 401: every logging path.
        let halts = try await withSink(faults: faults, logger: logger) { server, sink in
            _ = await sink.deliver(records)
            var failing = FakeBrazeFaults()
            failing.serverErrorRate = 1
            server.setFaults(failing)
            _ = await sink.deliver(distinctEvents(2))
            failing = FakeBrazeFaults()
            failing.unauthorizedAfterRequests = 0
            server.setFaults(failing)
            let report = await sink.deliver(distinctEvents(2))
            #expect(report.halt != nil)
            return [String(describing: sink), String(reflecting: sink), "\(report.halt.map { "\($0)" } ?? "")"]
        }
        let captured = lines.value
        #expect(captured.contains { $0.contains("braze request answered") })
        #expect(captured.contains { $0.contains("warning") })
        #expect(!captured.contains { $0.contains(testKey) })

        let key = try BrazeAPIKey(testKey)
        var dumped = ""
        dump(key, to: &dumped)
        let errors: [BrazeConfigurationError] = [
            .missingKey, .emptyKey(source: "x"), .malformedKey(source: "x"),
            .unreadableKeyFile(source: "x", reason: "y"), .invalidBaseURL("http://"),
        ]
        let texts =
            halts + [String(describing: key), String(reflecting: key), "\(key)", dumped] + errors.map { "\($0)" }
        for text in texts { #expect(!text.contains(testKey), "leaked in: \(text)") }
        #expect(String(describing: key) == "BrazeAPIKey(redacted)")
    }
}

extension Optional where Wrapped == DeliveryOutcome {
    /// A retry of this cause: every failure of these tests says nothing about the records (issue 30: no attempt).
    func isRetry(cause expected: RetryCause) -> Bool {
        if case .retry(_, _, let cause)? = self { return cause == expected }
        return false
    }
}
