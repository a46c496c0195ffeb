import FleetSimulation
import Testing

@testable import EventQueueBraze

/// The fleet simulation (issue 20, "past one machine"): H hosts running the daemon's own `BrazeRatePolicy`
/// against one fixed-window limit, on a simulated clock. The figures of docs/PERFORMANCE.md come from
/// `eventqueue-bench fleet`; these runs hold the same policy to the targets so that a change that breaks them
/// fails here first.
@Suite struct BrazeFleetSimulationTests {
    @Test func aRunReplaysExactly() {
        var configuration = BrazeFleetSimulation.Configuration(
            hosts: 4, requestsPerHost: 100, limit: 150, latencyMilliseconds: 50)
        configuration.seed = 42
        #expect(BrazeFleetSimulation(configuration).run() == BrazeFleetSimulation(configuration).run())
    }

    @Test(arguments: [(1, 534, 50.0), (2, 200, 50.0), (2, 200, 10.0), (4, 200, 50.0), (8, 200, 10.0)])
    func theBenchmarksScaleMeetsItsTargets(hosts: Int, requests: Int, latency: Double) {
        let outcome = BrazeFleetSimulation(
            .init(hosts: hosts, requestsPerHost: requests, limit: 150, latencyMilliseconds: latency)
        ).run()
        print("fleet sim \(hosts) hosts x \(requests) requests, 150/3 s, \(latency) ms: \(summary(outcome))")
        #expect(outcome.goodput >= (hosts == 1 ? 0.9 : 0.85), "\(summary(outcome))")
        #expect(outcome.rateLimitedShare <= 0.1, "\(summary(outcome))")
        #expect(outcome.fairness <= 1.5, "\(summary(outcome))")
    }

    @Test(arguments: [10, 50, 200])
    func fleetsAtBrazesRealLimit(hosts: Int) {
        let outcome = BrazeFleetSimulation(
            .init(hosts: hosts, requestsPerHost: 30_000 / hosts, limit: 3_000, latencyMilliseconds: 50)
        ).run()
        print("fleet sim \(hosts) hosts, 3000/3 s, 50 ms: \(summary(outcome))")
        #expect(outcome.goodput >= 0.85, "\(summary(outcome))")
        #expect(outcome.rateLimitedShare <= 0.1, "\(summary(outcome))")
        #expect(outcome.fairness <= 1.5, "\(summary(outcome))")
    }

    /// Clocks up to 2 s off Braze's (resets that look past, or too far): slower, but no hot loop and no stall.
    @Test func skewedClocksNeitherHammerNorStall() {
        var configuration = BrazeFleetSimulation.Configuration(
            hosts: 20, requestsPerHost: 300, limit: 3_000, latencyMilliseconds: 50)
        configuration.clockSkewMilliseconds = 2_000
        let outcome = BrazeFleetSimulation(configuration).run()
        print("fleet sim 20 hosts, clocks ±2 s: \(summary(outcome))")
        #expect(outcome.elapsedSeconds < outcome.idealSeconds * 2, "\(summary(outcome))")
        #expect(outcome.rateLimitedShare <= 0.25, "\(summary(outcome))")
    }

    func summary(_ outcome: BrazeFleetSimulation.Outcome) -> String {
        "took \(outcome.elapsedSeconds) s (ideal \(outcome.idealSeconds), window-aligned bound "
            + "\(outcome.windowBoundSeconds)), goodput \(outcome.goodput) (\(outcome.goodputAgainstWindowBound) of the bound), "
            + "429s \(outcome.rateLimited) of \(outcome.requests), slowest/fastest \(outcome.fairness)"
    }
}
