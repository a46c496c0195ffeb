import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The real `queued` with several requests in flight against a fake Braze that answers after a delay, as the
/// real one does: per-user order holds, no user is in two requests at once, requests are full, and a SIGKILL
/// while requests are in flight loses nothing, redelivers at most what was in flight, and the restarted daemon
/// takes over the killed daemon's leases at once instead of waiting out the lease.
@Suite(.serialized) struct ConcurrentDeliveryTests {
    @Test func manyRequestsInFlightKeepUserOrderAndAreFull() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 50
        try await BrazeScenario.run(records: MarkedRecord.make(3_000, users: 100), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(arguments: ["--max-in-flight", "8"])
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
                #expect(drain.stderr.contains("in flight"), "drain --wait progress shows records in flight")
                try await BrazeFault.waitUntilSettled(daemon, dead: 0)
                let metrics = try await daemon.request("GET", "/metrics").body
                for name in [
                    "eventqueue_braze_requests_in_flight", "eventqueue_braze_send_window",
                    "eventqueue_braze_rate_limit_waits_total", "eventqueue_braze_request_duration_seconds_bucket",
                    "eventqueue_records_in_flight",
                ] {
                    #expect(metrics.contains(name), "/metrics lacks \(name)")
                }
            }
            scenario.expectDeliveredOnce()
            let stats = scenario.server.stats()
            #expect(stats.userOverlaps == 0, "\(stats)")
            #expect(stats.maxInFlight > 1 && stats.maxInFlight <= 8, "\(stats)")
            #expect(3_000 / max(1, stats.requests) >= 70, "requests not full: \(stats.requests) for 3,000 objects")
            print("concurrent delivery: 3,000 records, \(stats.requests) requests, max in flight \(stats.maxInFlight)")
        }
    }

    @Test func maxRequestsPerSecondIsNeverExceededInAnySecond() async throws {
        try await BrazeScenario.run(records: MarkedRecord.make(900, users: 300)) { scenario in
            let daemon = try await scenario.startDaemon(
                arguments: [
                    "--max-in-flight", "8", "--braze-max-objects", "10", "--batch-size", "10",
                    "--max-requests-per-second", "20",
                ])
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
            }
            scenario.expectDeliveredOnce()
            let stats = scenario.server.stats()
            #expect(stats.requests >= 90)
            #expect(stats.maxRequestsInOneSecond <= 20, "\(stats)")
        }
    }

    /// SIGKILL while requests are in flight at a 50 ms round trip; the restarted daemon delivers the killed
    /// daemon's records within 5 s (it releases the leases of a process that no longer exists), loses nothing,
    /// reorders nothing, and redelivers at most the records that were in flight.
    @Test func sigkillWhileRequestsAreInFlightThenRestartTakesOverAtOnce() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 50
        let maxInFlight = 8
        try await BrazeScenario.run(records: MarkedRecord.make(6_000, users: 200), faults: faults) { scenario in
            let first = try await scenario.startDaemon(
                name: "first",
                arguments: ["--max-in-flight", "\(maxInFlight)", "--drain-on-start"])
            try await waitFor("some deliveries", timeout: .seconds(30)) { scenario.server.stats().requests >= 10 }
            first.signal(SIGKILL)
            _ = await first.waitForExit(timeout: .seconds(10))
            let leasedAtKill = try await BrazeFault.peek(db: scenario.db, in: scenario.scratch).filter {
                ($0["state"] as? String) == "leased"
            }
            #expect(!leasedAtKill.isEmpty, "the kill landed between batches; nothing was in flight")

            let restart = ContinuousClock.now
            let second = try await scenario.startDaemon(
                name: "second",
                arguments: ["--max-in-flight", "\(maxInFlight)", "--drain-on-start"])
            try await withDaemon(second) { daemon in
                // The killed daemon's records are delivered (leases released at once, not after 60 s).
                let killedMarkers = Set(
                    leasedAtKill.compactMap { ($0["object"] as? [String: Any]).flatMap(BrazeFault.marker) })
                try await waitFor("the killed daemon's records", timeout: .seconds(30)) {
                    let accepted = Set(BrazeFault.received(scenario.server).filter(\.accepted).map(\.marker))
                    return killedMarkers.isSubset(of: accepted)
                }
                let takeover = ContinuousClock.now - restart
                #expect(takeover < .seconds(5), "killed records delivered \(takeover) after the restart")
                print(
                    "takeover after SIGKILL: the killed daemon's \(killedMarkers.count) records delivered in \(takeover)"
                )
                try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(90))
            }
            let report = scenario.expectNothingLostOrReordered()
            // Crash bound: the batches in flight (max-in-flight x 75 records per claim).
            #expect(report.duplicateDeliveries <= maxInFlight * 75, "\(report)")
            #expect(scenario.server.stats().userOverlaps == 0)
            print("SIGKILL with requests in flight: \(report)")
        }
    }
}
