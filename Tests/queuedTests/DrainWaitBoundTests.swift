import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 32 #5: `queuectl drain --wait` against a sink that cannot finish the pass soon exits 11 at once, with the
/// reason, and the daemon's pass goes on. Before, against a 429 forever or a reset 15 minutes ahead, it blocked until
/// killed. Each test gives `drain --wait` far longer than the time it must take, so a missing bound fails it.
@Suite(.serialized) struct DrainWaitBoundTests {
    /// `queuectl drain --wait` with `extra` flags; killed after `within` (a hang is then the failure).
    static func drainWait(
        _ daemon: DaemonProcess, _ extra: [String] = [], within: Duration, in scratch: Scratch
    ) async throws -> (result: ProcessResult, seconds: Double) {
        let started = ContinuousClock.now
        let result = try await run(
            Products.queuectl, ["drain", "--socket", daemon.socket, "--wait"] + extra, timeout: within, in: scratch)
        return (result, OutageRun.seconds(ContinuousClock.now - started))
    }

    @Test func drainWaitExits11AtOnceWhenTheSinkIsUnavailable() async throws {
        var faults = FakeBrazeFaults()
        faults.serverErrorRate = 1
        try await BrazeScenario.run(records: MarkedRecord.make(300, users: 30), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(arguments: ["--max-attempts", "1"])
            try await withDaemon(daemon) { daemon in
                let (first, seconds) = try await Self.drainWait(daemon, within: .seconds(60), in: scenario.scratch)
                #expect(first.status == 11, "\(first.stdout) \(first.stderr)")
                #expect(seconds < 20, "\(seconds) s")
                #expect(first.stdout.contains("the sink is unavailable since"), "\(first.stdout)")
                #expect(first.stderr.contains("Braze answered 500"), "\(first.stderr)")
                // Again at once: the launch's probe fails (or is not due yet), and it says so.
                let (second, again) = try await Self.drainWait(
                    daemon, ["--json"], within: .seconds(60), in: scenario.scratch)
                #expect(second.status == 11, "\(second.stdout) \(second.stderr)")
                #expect(again < 20, "\(again) s")
                let report = try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [String: Any]
                #expect(report?["result"] as? String == "records_remain", "\(second.stdout)")
                let reasons = "\(report?["halt"] ?? "")\(report?["wait_ended"] ?? "")"
                #expect(reasons.contains("unavailable"), "\(second.stdout)")
                let dead = try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch)
                #expect(dead.isEmpty, "one attempt allowed, an outage spent none: \(dead.count) dead")
            }
        }
    }

    /// Issue 40 #5: `drain --wait` just after an outage ends, within 5 s of the last probe (the least spacing of
    /// two), waits for the probe its launch asked for, which finds Braze back, and exits 0 with everything
    /// delivered (before: exit 11 at once, "next probe at ...", the records still queued).
    @Test func drainWaitRightAfterAnOutageEndsWaitsForTheProbe() async throws {
        var faults = FakeBrazeFaults()
        faults.serverErrorRate = 1
        try await BrazeScenario.run(records: MarkedRecord.make(20, users: 5), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let (outage, _) = try await Self.drainWait(daemon, within: .seconds(60), in: scenario.scratch)
                #expect(outage.status == 11, "\(outage.stdout) \(outage.stderr)")
                try await waitFor("a probe during the outage") {
                    let sink = try await daemon.daemonStatus()["sink"] as? [String: Any]
                    return (sink?["probes"] as? Int ?? 0) >= 1
                }
                scenario.server.setFaults(FakeBrazeFaults())
                let (after, seconds) = try await Self.drainWait(daemon, within: .seconds(60), in: scenario.scratch)
                print("DrainWaitBound after an outage: exit \(after.status) after \(seconds) s")
                #expect(after.status == 0, "\(after.stdout) \(after.stderr)")
                #expect(seconds < 15, "\(seconds) s: one probe's spacing at most")
                scenario.expectNothingLostOrReordered()
            }
        }
    }

    @Test func drainWaitExits11AtOnceWhenARateLimitResetIsFarAhead() async throws {
        var faults = FakeBrazeFaults()
        faults.rateLimitNextRequests = 1_000_000  // 429 forever
        faults.rateLimitResetAfterSeconds = 900  // "Remaining: 0", the reset 15 minutes ahead
        try await BrazeScenario.run(records: MarkedRecord.make(20, users: 5), faults: faults) { scenario in
            // The pass waits for the window when the daemon stops: a short shutdown timeout releases its records.
            let daemon = try await scenario.startDaemon(arguments: ["--shutdown-timeout", "1"])
            try await withDaemon(daemon) { daemon in
                let (result, seconds) = try await Self.drainWait(daemon, within: .seconds(120), in: scenario.scratch)
                #expect(result.status == 11, "\(result.stdout) \(result.stderr)")
                #expect(seconds < 15, "\(seconds) s")
                #expect(result.stderr.contains("rate limit"), "\(result.stderr)")
                print("DrainWaitBound rate limit: exit \(result.status) after \(seconds) s")
                #expect(result.stdout.contains("not waiting for the rest"), "\(result.stdout)")
                // The daemon's pass goes on, its records leased and waiting for the window.
                let state = try await daemon.daemonStatus()
                #expect(state["state"] as? String == "draining", "\(state)")
            }
        }
    }

    @Test func drainWaitGivesUpAfterItsTimeout() async throws {
        var faults = FakeBrazeFaults()
        faults.rateLimitNextRequests = 1_000_000  // 429 forever, each with a short Retry-After: no long wait
        faults.retryAfterSeconds = 1
        try await BrazeScenario.run(records: MarkedRecord.make(20, users: 5), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(arguments: ["--shutdown-timeout", "1"])
            try await withDaemon(daemon) { daemon in
                let (result, seconds) = try await Self.drainWait(
                    daemon, ["--timeout", "3"], within: .seconds(60), in: scenario.scratch)
                #expect(result.status == 11, "\(result.stdout) \(result.stderr)")
                #expect(seconds >= 3 && seconds < 15, "\(seconds) s")
                #expect(result.stderr.contains("--timeout 3"), "\(result.stderr)")
            }
            let usage = try await run(
                Products.queuectl, ["drain", "--timeout", "5"], in: scenario.scratch)
            #expect(usage.status == 64, "--timeout without --wait: \(usage.stderr)")
        }
    }

    /// A local drain has no daemon to go on for it: against a sink that fails it ends, exit 11 with the reason, the
    /// records kept with no attempt counted.
    @Test func drainLocalEndsWithExit11AndTheReasonWhenItsSinkFails() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(20, db: db, in: scratch)
        let result = try await run(
            Products.queuectl,
            ["drain", "--local", "--sink", "jsonl:/dev/full", "--batch-size", "5", "--max-attempts", "1", "--db", db],
            timeout: .seconds(60), in: scratch)
        #expect(result.status == 11, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("No space left on device"), "\(result.stdout)")
        let live = try await BrazeFault.peek(db: db, in: scratch)
        #expect(live.count == 20 && live.allSatisfy { $0["attempts"] as? Int == 0 }, "\(live.prefix(2))")
    }
}
