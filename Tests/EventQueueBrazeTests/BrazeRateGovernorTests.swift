import EventQueue
import EventQueueDelivery
import FakeBraze
import Foundation
import Logging
import Testing

@testable import EventQueueBraze

/// Rate steering: `--max-requests-per-second`, `X-RateLimit-*` and 429s (issue 16 defect 4: a 429 with
/// `Retry-After: 0`, or a reset already past, must not make a hot loop).
@Suite struct BrazeRateGovernorTests {
    @Test func a429PausesAtLeastOneSecondWhateverTheHintAndLongerWhileTheyKeepComing() async throws {
        let lines = Locked<[String]>([])
        let logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
        let governor = BrazeRateGovernor(
            maxWindow: 16, maxRequestsPerSecond: nil, logger: logger, wallMilliseconds: { 1_000_000 })
        var pauses: [Int64] = []
        for _ in 0..<4 {
            #expect(await governor.acquire())
            pauses.append(await governor.release(.rateLimited(hintMilliseconds: 0)) ?? -1)
        }
        #expect(pauses[0] >= 1_000 && pauses[0] <= 1_500, "\(pauses)")
        #expect(pauses[1] >= 2_000 && pauses[1] <= 3_000, "\(pauses)")
        #expect(pauses[3] >= 8_000 && pauses[3] <= 12_000, "\(pauses)")
        #expect(await governor.snapshot.window == 1, "halved on every 429: 16, 8, 4, 2, 1")
        #expect(lines.value.filter { $0.contains("braze rate limit: pausing") }.count == 1, "once per streak")
        // An answer ends the streak and grows the window back by one.
        await governor.release(.answered(remaining: nil, resetAtMilliseconds: nil))
        #expect(await governor.snapshot.window == 2)
        #expect(lines.value.contains { $0.contains("braze rate limit lifted") })
    }

    @Test func aHintLongerThanTheFloorIsHonoured() async {
        let governor = BrazeRateGovernor(
            maxWindow: 4, maxRequestsPerSecond: nil, logger: quietLogger, wallMilliseconds: { 0 })
        #expect(await governor.acquire())
        #expect(await governor.release(.rateLimited(hintMilliseconds: 7_000)) == 7_000)
    }

    @Test func noOneSecondWindowHoldsMoreThanTheCap() async throws {
        let governor = BrazeRateGovernor(
            maxWindow: 16, maxRequestsPerSecond: 4, logger: quietLogger, wallMilliseconds: { 0 })
        var starts: [ContinuousClock.Instant] = []
        for _ in 0..<10 {
            #expect(await governor.acquire())
            starts.append(.now)
            await governor.release(.answered(remaining: nil, resetAtMilliseconds: nil))
        }
        for (index, start) in starts.enumerated() {
            let inWindow = starts[index...].filter { $0 < start + .seconds(1) }.count
            #expect(inWindow <= 4, "\(inWindow) starts within 1 s of start \(index)")
        }
        #expect(await governor.snapshot.rateLimitWaits > 0)
    }

    @Test func remainingZeroStopsRequestsUntilTheReset() async throws {
        let wall = WallClock.nowMilliseconds()
        let governor = BrazeRateGovernor(
            maxWindow: 4, maxRequestsPerSecond: nil, logger: quietLogger, wallMilliseconds: { wall })
        #expect(await governor.acquire())
        await governor.release(.answered(remaining: 0, resetAtMilliseconds: wall + 300))
        let start = ContinuousClock.now
        #expect(await governor.acquire())
        #expect(ContinuousClock.now - start >= .milliseconds(290))
        // A reset already past (our clock ahead of Braze's) stops nothing.
        await governor.release(.answered(remaining: 0, resetAtMilliseconds: wall - 5_000))
        let again = ContinuousClock.now
        #expect(await governor.acquire())
        #expect(ContinuousClock.now - again < .milliseconds(250))
    }

    /// End to end against the fake: `Retry-After: 0` retries the records after at least 1 s (not 0), and the next
    /// delivery waits out the pause instead of hammering Braze.
    @Test func retryAfterZeroFromBrazeMakesNoHotLoop() async throws {
        var faults = FakeBrazeFaults()
        faults.rateLimitNextRequests = 1
        faults.retryAfterSeconds = 0
        try await withSink(faults: faults) { server, sink in
            let first = await sink.deliver(distinctEvents(5))
            for outcome in first.outcomes.values {
                guard case .retry(_, let after, let counts) = outcome else {
                    Issue.record("expected a retry, got \(outcome)")
                    continue
                }
                #expect((after ?? 0) >= 1_000, "a Retry-After: 0 must not retry at once")
                #expect(!counts, "a 429 costs no attempt")
            }
            let start = ContinuousClock.now
            let second = await sink.deliver(distinctEvents(5))
            #expect(ContinuousClock.now - start >= .milliseconds(990), "the next request waited for the pause")
            #expect(second.outcomes.values.allSatisfy { $0 == .delivered })
            #expect(server.stats().requests == 2)
        }
    }

    /// The fake's detector works: two requests in flight naming one user are counted; different users are not.
    @Test func theFakeCountsAUserInTwoRequestsInFlight() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 300
        try await withSink(faults: faults) { server, sink in
            async let a = sink.deliver([event(1, user: "same")])
            async let b = sink.deliver([event(2, user: "same")])
            _ = await (a, b)
            #expect(server.stats().userOverlaps == 1)
            #expect(server.stats().maxInFlight == 2)
            server.reset()
            async let c = sink.deliver([event(3, user: "one")])
            async let d = sink.deliver([event(4, user: "other")])
            _ = await (c, d)
            #expect(server.stats().userOverlaps == 0)
        }
    }
}
