import Testing

@testable import EventQueueCommandLine

/// Numeric options are range-checked with the range in the message, and nothing traps (issue 13, item 9).
@Suite struct OptionRangeTests {
    @Test func rangesNameTheRangeAndRefuseNonFiniteValues() {
        #expect(
            OptionRange.problem("--batch-size", 0, OptionRange.batchSize) == "--batch-size must be 1 to 10000 (got 0)")
        #expect(OptionRange.problem("--batch-size", 100, OptionRange.batchSize) == nil)
        #expect(OptionRange.problem("--shutdown-timeout", 1e300, OptionRange.shutdownTimeoutSeconds) != nil)
        #expect(OptionRange.problem("--shutdown-timeout", .nan, OptionRange.shutdownTimeoutSeconds) != nil)
        #expect(OptionRange.problem("--drain-interval", .infinity, OptionRange.drainIntervalSeconds) != nil)
        #expect(OptionRange.leaseMilliseconds(seconds: Int.max) == 900_000)
        #expect(OptionRange.leaseMilliseconds(seconds: Int.min) == 1000)
        #expect(OptionRange.leaseMilliseconds(seconds: 60) == 60_000)
    }
}
