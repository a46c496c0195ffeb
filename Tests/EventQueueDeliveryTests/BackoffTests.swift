import EventQueue
import Testing

@testable import EventQueueDelivery

@Suite struct BackoffTests {
    @Test func ceilingsDoubleFromOneSecondUpToFiveMinutes() {
        let backoff = Backoff()
        #expect(
            (1...10).map { backoff.ceiling(attempt: $0) } == [
                1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000,
            ])
        for attempt in [11, 12, 40, 41, 62, 63, 64, 65, 1_000, Int.max] {
            #expect(backoff.ceiling(attempt: attempt) == 300_000, "attempt \(attempt)")
        }
        // Before the first retry (or nonsense input) the smallest ceiling applies.
        #expect(backoff.ceiling(attempt: 0) == 1_000)
        #expect(backoff.ceiling(attempt: -5) == 1_000)
    }

    @Test func hugeBasesAndAttemptsDoNotOverflow() {
        let huge = Backoff(baseMilliseconds: .max / 2, capMilliseconds: .max)
        #expect(huge.ceiling(attempt: 1) == .max / 2)
        #expect(huge.ceiling(attempt: 2) == .max - 1)
        #expect(huge.ceiling(attempt: 3) == .max, "overflow saturates at the cap")
        #expect(huge.ceiling(attempt: 1_000) == .max)
        let uncapped = Backoff(baseMilliseconds: 1, capMilliseconds: .max)
        var previous: Int64 = 0
        for attempt in 1...2_000 {
            let ceiling = uncapped.ceiling(attempt: attempt)
            #expect(ceiling >= previous, "ceilings never shrink (attempt \(attempt))")
            #expect(ceiling > 0)
            previous = ceiling
        }
    }

    @Test func initKeepsBaseAndCapUsable() {
        let zero = Backoff(baseMilliseconds: 0, capMilliseconds: 0)
        #expect(zero.baseMilliseconds == 1 && zero.capMilliseconds == 1)
        let negative = Backoff(baseMilliseconds: -10, capMilliseconds: -10)
        #expect(negative.baseMilliseconds == 1 && negative.capMilliseconds == 1)
        let inverted = Backoff(baseMilliseconds: 5_000, capMilliseconds: 10)
        #expect(inverted.capMilliseconds == 5_000, "the cap is never below the base")
        #expect(inverted.ceiling(attempt: 7) == 5_000)
    }

    @Test(arguments: [1, 2, 3, 5, 9, 10, 11, 1_000])
    func delaysAreFullJitterWithinTheCeiling(attempt: Int) {
        let backoff = Backoff()
        let ceiling = backoff.ceiling(attempt: attempt)
        var generator = SplitMix64(seed: 0x5EED + UInt64(attempt))
        let samples = (0..<2_000).map { _ in backoff.delay(attempt: attempt, using: &generator) }
        #expect(samples.allSatisfy { (1...ceiling).contains($0) })
        #expect(Set(samples).count > 500, "jittered, not lock-step")
        // Full jitter: the whole range is used, not just the top of it.
        #expect(samples.min().map { $0 <= ceiling / 10 } == true)
        #expect(samples.max().map { $0 >= ceiling / 10 * 9 } == true)
    }

    @Test func delaysAreReproducibleWithASeededGenerator() {
        let backoff = Backoff()
        var first = SplitMix64(seed: 42)
        var second = SplitMix64(seed: 42)
        let one = (1...50).map { backoff.delay(attempt: $0 % 12, using: &first) }
        let two = (1...50).map { backoff.delay(attempt: $0 % 12, using: &second) }
        #expect(one == two)
    }

    @Test func systemRandomDelaysStayInRange() {
        let backoff = Backoff(baseMilliseconds: 100, capMilliseconds: 1_000)
        var generator = SystemRandomNumberGenerator()
        for attempt in 1...6 {
            let ceiling = backoff.ceiling(attempt: attempt)
            let samples = (0..<500).map { _ in backoff.delay(attempt: attempt, using: &generator) }
            #expect(samples.allSatisfy { (1...ceiling).contains($0) })
            #expect(Set(samples).count > 1)
        }
    }

    @Test func aOneMillisecondBackoffAlwaysWaitsOneMillisecond() {
        let backoff = Backoff(baseMilliseconds: 1, capMilliseconds: 1)
        var generator = SplitMix64(seed: 7)
        for attempt in [1, 2, 10, 1_000] {
            #expect(backoff.delay(attempt: attempt, using: &generator) == 1)
        }
    }

    /// Due times count from the `now` the drain loop passes (its injected clock's), so a test that advances that
    /// clock by the ceiling finds the record due; a sink's hint wins, kept within 1 ms and the clock horizon.
    @Test func dueTimesCountFromTheGivenNowAndStayWithinTheHorizon() {
        let backoff = Backoff()
        let now: Int64 = 1_800_000_000_000
        var generator = SplitMix64(seed: 11)
        for attempt in 1...12 {
            let due = backoff.dueTime(attempt: attempt, hint: nil, now: now, using: &generator)
            #expect((now + 1...now + backoff.ceiling(attempt: attempt)).contains(due), "attempt \(attempt)")
        }
        #expect(backoff.dueTime(attempt: 1, hint: 30_000, now: now) == now + 30_000, "the sink's hint wins")
        #expect(backoff.dueTime(attempt: 1, hint: 0, now: now) == now + 1)
        #expect(backoff.dueTime(attempt: 1, hint: -5_000, now: now) == now + 1)
        #expect(backoff.dueTime(attempt: 1, hint: .max, now: now) == now + ClockHorizon.longestWaitMilliseconds)
    }
}
