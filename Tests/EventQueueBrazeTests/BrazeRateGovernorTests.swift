import EventQueue
import EventQueueDelivery
import FakeBraze
import Foundation
import Logging
import Synchronization
import Testing

@testable import EventQueueBraze

/// Rate steering (issue 20): a 429 is back-pressure, waits fit Braze's window, one overshoot is one round, and
/// `Retry-After: 0` or a reset already past still cannot make a hot loop (issue 16 defect 4). The policy is a
/// value driven with explicit times (a manual clock); the actor and the sink are checked against the fake.
@Suite struct BrazeRateGovernorTests {
    /// Braze's clock at t = 0 of these tests: 400 ms into a 3 s window whose reset is 1,800,000,003 s.
    static let wall0: Int64 = 1_800_000_000_400
    static let reset: Int64 = 1_800_000_003_000

    static func at(_ milliseconds: Int64) -> Moment {
        Moment(monotonic: .milliseconds(milliseconds), wallMilliseconds: wall0 + milliseconds)
    }

    static func headers(remaining: Int, reset: Int64 = reset, limit: Int = 150) -> BrazeRateHeaders {
        var headers = BrazeRateHeaders()
        headers.limit = limit
        headers.remaining = remaining
        headers.resetAtMilliseconds = reset
        return headers
    }

    static func start(_ policy: inout BrazeRatePolicy, at time: Int64) throws -> BrazeRatePolicy.Ticket {
        guard case .start(let ticket) = policy.decide(at: at(time)) else {
            throw Failure("no start at \(time) ms: \(policy.decide(at: at(time)))")
        }
        return ticket
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// When the next request may start, in milliseconds from t = 0 (`nil`: waits for an answer).
    static func nextStart(_ policy: inout BrazeRatePolicy, at time: Int64) -> Int64? {
        var copy = policy
        switch copy.decide(at: at(time)) {
        case .start: return time
        case .wait(let until): return until.wholeMilliseconds
        case .waitForAnswer: return nil
        }
    }

    @Test func twentyFour429sFromOneOvershootAreOneRound() throws {
        var policy = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 1)
        // Slow start: one request, then one more in flight per answer, up to the window of 24.
        for index in 0..<30 {
            let ticket = try Self.start(&policy, at: Int64(index))
            policy.release(
                ticket, .answered(Self.headers(remaining: 3_000, limit: 3_000)), at: Self.at(Int64(index)))
        }
        #expect(policy.window == 24)
        // Another host takes the rest of the window while these 24 are in flight: all 24 come back 429.
        let tickets = try (0..<24).map { index in try Self.start(&policy, at: 30 + Int64(index)) }
        for (index, ticket) in tickets.enumerated() {
            policy.release(
                ticket, .rateLimited(Self.headers(remaining: 0), hintMilliseconds: 2_550),
                at: Self.at(50 + Int64(index)))
        }
        let snapshot = policy.snapshot(at: Self.at(80))
        #expect(snapshot.rateLimitedRequests == 24)
        #expect(snapshot.rateLimitRounds == 1, "one overshoot, one round")
        #expect(snapshot.window == 12, "halved once, not 24 times")
        #expect(policy.streak == 1)
        // The wait is the reset (2.6 s from t = 0) plus at most 90 ms of jitter (3 % of 3 s), not a minute.
        let resume = try #require(Self.nextStart(&policy, at: 80))
        #expect(resume >= 2_600 && resume <= 2_600 + 90, "\(resume)")
    }

    @Test func aPlausibleResetIsWaitedForThenOneProbeGoesFirst() throws {
        var policy = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 2)
        let ticket = try Self.start(&policy, at: 0)
        policy.release(ticket, .answered(Self.headers(remaining: 0)), at: Self.at(50))
        let resume = try #require(Self.nextStart(&policy, at: 60))
        #expect(resume >= 2_600 && resume <= 2_690, "waits for the reset plus jitter: \(resume)")
        #expect(policy.snapshot(at: Self.at(60)).waitingUntilMilliseconds == Self.wall0 + resume)
        // After the reset, the old reading says nothing: one probe, then nothing until it is answered.
        let probe = try Self.start(&policy, at: resume)
        #expect(Self.nextStart(&policy, at: resume + 1) == nil)
        policy.release(
            probe, .answered(Self.headers(remaining: 149, reset: Self.reset + 3_000)), at: Self.at(resume + 50))
        // Then paced across the new window: about 2.35 s left for 149 requests, one every ~15.8 ms.
        let next = try #require(Self.nextStart(&policy, at: resume + 50))
        #expect(next == resume + 50, "the probe's answer opens the window at once")
    }

    /// Without contention a reset costs nothing: a window that ended with a quarter or more of its limit to spare
    /// is followed by pacing on the next one's full limit, not by a probe and a round trip.
    @Test func aWindowWithRoomToSpareNeedsNoProbeAfterItsReset() throws {
        var policy = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 7)
        for index in 0..<5 {
            let ticket = try Self.start(&policy, at: Int64(index) * 30)
            policy.release(ticket, .answered(Self.headers(remaining: 100 - index)), at: Self.at(Int64(index) * 30 + 1))
        }
        _ = try Self.start(&policy, at: 2_700)
        // Paced on the next window's full limit (150 over ~2.9 s: every ~19.5 ms), not waiting for an answer.
        let next = try #require(Self.nextStart(&policy, at: 2_701), "a second request in flight right after the reset")
        #expect(next <= 2_720, "\(next)")
        let contended = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 8)
        var busy = contended
        let ticket = try Self.start(&busy, at: 0)
        busy.release(ticket, .answered(Self.headers(remaining: 10)), at: Self.at(10))
        _ = try Self.start(&busy, at: 2_700)
        #expect(Self.nextStart(&busy, at: 2_701) == nil, "after a contended window, one probe first")
    }

    /// Runs one host against a window of 130 requests left, answers after 50 ms, while `others` other hosts each
    /// take one request from the window per answer of this host; returns this host's start times (ms).
    static func spend(_ policy: inout BrazeRatePolicy, others: Int) throws -> [Int64] {
        let first = try start(&policy, at: 0)
        policy.release(first, .answered(headers(remaining: 130)), at: at(50))
        var time: Int64 = 50
        var starts: [Int64] = []
        var inFlight: [(ticket: BrazeRatePolicy.Ticket, answerAt: Int64)] = []
        var remaining = 130
        while time < 2_600 {
            for sent in inFlight where sent.answerAt <= time {
                remaining = max(0, remaining - 1 - others)
                policy.release(sent.ticket, .answered(headers(remaining: remaining)), at: at(time))
            }
            inFlight.removeAll { $0.answerAt <= time }
            if remaining > 0, case .start(let ticket) = policy.decide(at: at(time)) {
                starts.append(time)
                inFlight.append((ticket, time + 50))
            }
            time += 1
        }
        return starts
    }

    @Test func aHostAloneUsesWhatIsLeftAtOnce() throws {
        var policy = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 3)
        let starts = try Self.spend(&policy, others: 0)
        #expect(policy.sharers <= BrazeRatePolicy.aloneAtMost)
        #expect(starts.count >= 120 && starts.count <= 130, "\(starts.count) starts for 130 remaining")
        // Slow start, then the send window: all of it well before the reset, not spread to its end.
        #expect((starts.last ?? .max) < 1_000, "\(starts.suffix(3))")
    }

    @Test func sharedWindowsArePacedNotBurst() throws {
        var policy = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 3)
        // Two other hosts at this host's rate: the window falls three times as fast as this host spends it.
        let starts = try Self.spend(&policy, others: 2)
        #expect(policy.sharers >= 2.5 && policy.sharers <= 3.5, "measured \(policy.sharers) sharers")
        #expect(starts.count <= 130 / 3 + 5, "\(starts.count) starts: more than a third of the window")
        let gaps = zip(starts.dropFirst(), starts).map { $0 - $1 }
        #expect(starts.prefix(10).last.map { $0 >= 150 } == true, "not a burst at the start: \(starts.prefix(10))")
        #expect((gaps.max() ?? 0) <= 300, "no burst then stall: \(gaps.max() ?? 0)")
    }

    @Test func retryAfterZeroAndAResetInThePastMakeNoHotLoop() throws {
        var policy = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 4)
        var time: Int64 = 0
        var sent = 0
        var pauses: [Int64] = []
        while time < 60_000 {
            guard let start = Self.nextStart(&policy, at: time) else {
                Issue.record("waits for an answer with nothing in flight")
                return
            }
            pauses.append(start - time)
            time = start
            let ticket = try Self.start(&policy, at: time)
            sent += 1
            // Braze's reset is 5 s behind our clock, and it says Retry-After: 0.
            var headers = Self.headers(remaining: 0, reset: Self.wall0 + time - 5_000)
            headers.retryAfterMilliseconds = 0
            time += 20
            policy.release(ticket, .rateLimited(headers, hintMilliseconds: 0), at: Self.at(time))
        }
        #expect(sent <= 14, "\(sent) requests in a minute of 429s: \(pauses)")
        #expect(
            pauses.dropFirst().prefix(4).enumerated().allSatisfy { index, pause in
                pause >= (BrazeRatePolicy.pauseFloor << index) - 20
            }, "the floor doubles each round: \(pauses)")
        #expect(policy.streak == sent)
    }

    @Test func anAnswerWithoutRateHeadersLeavesNoPacing() throws {
        var policy = BrazeRatePolicy(maxWindow: 4, maxRequestsPerSecond: nil, seed: 5)
        let first = try Self.start(&policy, at: 0)
        policy.release(first, .answered(Self.headers(remaining: 0, reset: Self.wall0 - 1_000)), at: Self.at(10))
        #expect(Self.nextStart(&policy, at: 10) == 10, "a stale reading allows one probe")
        let probe = try Self.start(&policy, at: 10)
        policy.release(probe, .answered(BrazeRateHeaders()), at: Self.at(20))
        // Slow start has opened the send window to 3 (one per answer): only it holds now, no pacing.
        for _ in 0..<3 { _ = try Self.start(&policy, at: 20) }
        #expect(policy.window == 3)
        #expect(Self.nextStart(&policy, at: 20) == nil, "only the send window holds")
    }

    @Test func aNewHostSendsOneRequestFirstAndLateAnswersDoNotRewindTheReading() throws {
        var policy = BrazeRatePolicy(maxWindow: 24, maxRequestsPerSecond: nil, seed: 6)
        let a = try Self.start(&policy, at: 0)
        #expect(Self.nextStart(&policy, at: 1) == nil, "nothing read yet: one request, then wait for its answer")
        policy.release(a, .answered(Self.headers(remaining: 100)), at: Self.at(30))
        let b = try Self.start(&policy, at: 40)
        let c = try Self.start(&policy, at: 70)
        policy.release(c, .answered(Self.headers(remaining: 10, reset: Self.reset + 3_000)), at: Self.at(100))
        policy.release(b, .answered(Self.headers(remaining: 100)), at: Self.at(105))
        #expect(policy.snapshot(at: Self.at(105)).remaining == 10)
        #expect(policy.snapshot(at: Self.at(105)).resetAtMilliseconds == Self.reset + 3_000)
    }

    @Test func theActorSleepsOnItsClock() async throws {
        let clock = SteppingClock(wall: Self.wall0)
        let governor = BrazeRateGovernor(maxWindow: 4, maxRequestsPerSecond: nil, logger: quietLogger, clock: clock)
        let ticket = try #require(await governor.acquire())
        await governor.release(ticket, .answered(Self.headers(remaining: 0)))
        _ = try #require(await governor.acquire())
        let waited = clock.slept
        #expect(waited >= .milliseconds(2_600) && waited <= .milliseconds(2_690), "\(waited)")
        #expect(await governor.snapshot.rateLimitWaits == 1)
    }

    /// An answer wakes the request waiting for the send window at once; the governor does not poll for it (a
    /// 2 ms poll woke every waiting delivery 500 times a second: issue 34). On a clock where time never passes,
    /// only the answer can wake it.
    @Test(.timeLimit(.minutes(1))) func anAnswerWakesTheRequestWaitingForIt() async throws {
        let governor = BrazeRateGovernor(
            maxWindow: 4, maxRequestsPerSecond: nil, logger: quietLogger, clock: StoppedClock())
        let first = try #require(await governor.acquire())
        let answered = Mutex(false)
        let second = Task { () -> Bool? in
            guard await governor.acquire() != nil else { return nil }
            return answered.withLock { $0 }
        }
        try await Self.untilWaitingForAnswer(governor)
        answered.withLock { $0 = true }
        await governor.release(first, .answered(BrazeRateHeaders()))
        // Not woken within 10 s: cancelled, so that the test fails (nil) instead of waiting forever.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(10))
            second.cancel()
        }
        let started = await second.value
        watchdog.cancel()
        #expect(started == true, "the second request started only after the first one's answer")
        #expect(await governor.snapshot.rateLimitWaits == 1)
    }

    /// A request waiting for an answer that never comes ends when its task is cancelled, without a start.
    @Test(.timeLimit(.minutes(1))) func aCancelledWaitForAnAnswerEndsWithoutAStart() async throws {
        let governor = BrazeRateGovernor(
            maxWindow: 4, maxRequestsPerSecond: nil, logger: quietLogger, clock: StoppedClock())
        _ = try #require(await governor.acquire())
        let waiting = Task { await governor.acquire() }
        try await Self.untilWaitingForAnswer(governor)
        waiting.cancel()
        #expect(await waiting.value == nil)
        #expect(await governor.snapshot.requestsInFlight == 1)
    }

    /// Returns once a request is parked waiting for an answer (not a fixed sleep: under load the request's task
    /// may not have reached the governor yet, and would then start without waiting).
    static func untilWaitingForAnswer(_ governor: BrazeRateGovernor) async throws {
        while await governor.waitingForAnswer == 0 { try await Task.sleep(for: .milliseconds(1)) }
    }

    @Test func noOneSecondWindowHoldsMoreThanTheCap() async throws {
        let governor = BrazeRateGovernor(maxWindow: 16, maxRequestsPerSecond: 4, logger: quietLogger)
        var starts: [ContinuousClock.Instant] = []
        for _ in 0..<10 {
            let ticket = try #require(await governor.acquire())
            starts.append(.now)
            await governor.release(ticket, .answered(BrazeRateHeaders()))
        }
        for (index, start) in starts.enumerated() {
            let inWindow = starts[index...].filter { $0 < start + .seconds(1) }.count
            #expect(inWindow <= 4, "\(inWindow) starts within 1 s of start \(index)")
        }
        #expect(await governor.snapshot.rateLimitWaits > 0)
    }

    /// End to end against the fake: a 429 with `Retry-After: 0` is sent again by the sink itself after the first
    /// round's floor (not at once), the records are delivered, and no attempt is spent.
    @Test func aRateLimitedRequestIsSentAgainAfterThePause() async throws {
        var faults = FakeBrazeFaults()
        faults.rateLimitNextRequests = 1
        faults.retryAfterSeconds = 0
        try await withSink(faults: faults) { server, sink in
            let start = ContinuousClock.now
            let report = await sink.deliver(distinctEvents(5))
            #expect(ContinuousClock.now - start >= .milliseconds(BrazeRatePolicy.pauseFloor))
            #expect(report.outcomes.values.allSatisfy { $0 == .delivered }, "\(report)")
            #expect(report.halt == nil)
            #expect(server.stats().requests == 2)
            #expect(server.stats().byStatus[429] == 1)
            let status = await sink.rateStatus()
            #expect(status.rateLimitedRequests == 1 && status.rateLimitRounds == 1)
            #expect(status.limit == 3_000)
        }
    }

    /// The fake's detector works: two requests in flight naming one user are counted; different users are not.
    @Test func theFakeCountsAUserInTwoRequestsInFlight() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 300
        try await withSink(faults: faults) { server, sink in
            // A first answer opens the send window (slow start) and gives the pacing a reading.
            _ = await sink.deliver([event(100, user: "first")])
            server.reset()
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

/// A drain clock whose sleeps return at once and move it forward by what was asked: the actor's waits are
/// measured without waiting.
final class SteppingClock: DrainClock {
    private let state: Mutex<(wall: Int64, monotonic: Duration, slept: Duration)>

    init(wall: Int64) {
        state = Mutex((wall, .zero, .zero))
    }

    var slept: Duration { state.withLock { $0.slept } }

    func wallMilliseconds() -> Int64 { state.withLock { $0.wall } }
    func monotonic() -> Duration { state.withLock { $0.monotonic } }
    func bootClock() -> BootClockReading { .system() }
    func sleep(for duration: Duration) async throws {
        state.withLock { state in
            let step = max(duration, .milliseconds(1))
            state.monotonic += step
            state.slept += step
            state.wall += step.wholeMilliseconds
        }
    }
}

/// A drain clock on which time never passes: a sleep ends only when its task is cancelled.
struct StoppedClock: DrainClock {
    func wallMilliseconds() -> Int64 { BrazeRateGovernorTests.wall0 }
    func monotonic() -> Duration { .zero }
    func bootClock() -> BootClockReading { .system() }
    func sleep(for duration: Duration) async throws { try await Task.sleep(for: .seconds(3_600)) }
}
