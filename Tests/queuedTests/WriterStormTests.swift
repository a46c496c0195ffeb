import FakeBraze
import Foundation
import EventQueue
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The writer storm with chaos on both sides: eight writer processes of four kinds enqueue at once (library
/// loops, one `queuectl enqueue` per record, `queuectl enqueue --ndjson` bulk files, and Python's sqlite3 running
/// the INSERT of docs/SCHEMA.md) while `queued` drains to the fake Braze `/users/track`, which answers some
/// requests 500 or 429. Writers and the daemon are killed with SIGKILL at random moments and restarted. After a
/// final drain, the history checker (and `scripts/check-history`, which must agree) judges what the fake
/// received against what the writers logged: lost 0, unexpected 0, reordered 0, duplicates at most the batches in
/// flight per daemon kill. A record whose writer was killed mid-call is indeterminate: it may or may not arrive.
@Suite(.serialized) struct WriterStormTests {
    /// How long the storm lasts: EVENTQUEUE_STORM_SECONDS, else 40 s (CI) or 600 s (long profile).
    static let stormSeconds = TestProfile.seconds("EVENTQUEUE_STORM_SECONDS", ci: 40, long: 600)
    static let batchSize = 25
    /// Requests in flight at once: concurrency in the storm, and the crash bound's factor (a SIGKILL redelivers
    /// at most the batches in flight, `maxInFlight` x the claim size; docs/RELIABILITY.md).
    static let maxInFlight = 4

    @Test func eightWritersAndTheDaemonKilledAtRandomLoseNothing() async throws {
        let started = ContinuousClock.now
        // The scenario makes the (empty) queue: it exists before the foreign writers connect (docs/SCHEMA.md).
        try await BrazeScenario.run(faults: .background(rateLimitRate: 0.02)) { scenario in
            let (scratch, db, key, server) = (scenario.scratch, scenario.db, scenario.key, scenario.server)
            let until = ContinuousClock.now + .milliseconds(Int(Self.stormSeconds * 1000))
            let daemonArguments = [
                "--drain-on-start", "--drain-interval", "0.3", "--lease-seconds", "2", "--batch-size",
                "\(Self.batchSize)", "--max-attempts", "1000", "--max-in-flight", "\(Self.maxInFlight)",
            ]

            async let daemonKills = Self.killDaemonRepeatedly(scenario, arguments: daemonArguments, until: until)
            let results = try await withThrowingTaskGroup(of: Storm.SlotResult.self) { group in
                for slot in 0..<2 {
                    group.addTask {
                        try await Storm.libraryWriter(
                            name: "L\(slot)", db: db, scratch: scratch, until: until, killAfter: 0.5...4,
                            batch: slot == 0 ? 1 : 8, pauseMilliseconds: slot == 0 ? 20 : 80)
                    }
                    group.addTask {
                        try await Storm.queuectlWriter(
                            "single", name: "Q\(slot)", db: db, scratch: scratch, until: until, killProbability: 0.25,
                            pauseMilliseconds: 0)
                    }
                    group.addTask {
                        try await Storm.queuectlWriter(
                            "bulk", name: "B\(slot)", db: db, scratch: scratch, until: until, killProbability: 0.3,
                            pauseMilliseconds: 150)
                    }
                    group.addTask {
                        try await Storm.foreignWriter(
                            name: "F\(slot)", db: db, scratch: scratch, until: until, killAfter: 0.5...4,
                            pauseMilliseconds: 20)
                    }
                }
                var results: [Storm.SlotResult] = []
                for try await result in group { results.append(result) }
                return results.sorted { $0.name < $1.name }
            }
            let kills = try await daemonKills
            _ = FileManager.default.createFile(atPath: scratch.file("stop-writers"), contents: nil)
            // Idempotent retries turn the library writers' indeterminate records into confirmed ones.
            for result in results where result.name.hasPrefix("L") {
                try await Storm.retryUnconfirmed(result, db: db, scratch: scratch)
            }

            // The final drain: no more faults, one daemon until nothing is pending or leased.
            server.setFaults(.none)
            let final = try await scenario.startDaemon(name: "final", arguments: daemonArguments)
            let settled = try await withDaemon(final) { daemon in
                try await BrazeFault.waitUntilSettled(daemon, timeout: .seconds(300))
            }
            #expect(settled["dead"] as? Int == 0, "nothing breaks a rule, so nothing may be dead: \(settled)")
            #expect(!final.log.contains(key))

            let (report, script) = try await Storm.judge(results, at: server, as: "writer-storm", scratch: scratch)
            let stats = server.stats()
            let writerKills = results.reduce(0) { $0 + $1.kills }
            print(
                "writer storm: \(report.summaryLine); confirmed \(report.enqueued), attempted \(report.attempted), "
                    + "deliveries \(report.delivered), indeterminate delivered \(report.indeterminateDelivered); "
                    + "daemon kills \(kills), writer kills \(writerKills) "
                    + "(\(results.map { "\($0.name) \($0.confirmedCalls) ok/\($0.kills) killed" }.joined(separator: ", "))); "
                    + "requests \(stats.requests), 500s \(stats.byStatus[500] ?? 0), 429s \(stats.byStatus[429] ?? 0); "
                    + "\(Int((ContinuousClock.now - started) / .seconds(1))) s")
            print("writer storm: scripts/check-history: \(script.summary)")

            expectNothingLostOrReordered(report)
            // The crash bound: each kill redelivers at most the batches that were in flight or delivered and not
            // yet acked (an ack waits while a writer holds the lock, so several can be), never more.
            #expect(
                report.duplicateDeliveries <= kills * Self.batchSize * Self.maxInFlight,
                "at most the batches in flight per daemon kill: \(report)")
            // The checker and the script read the same files the same way.
            #expect(script.summary == report.summaryLine)
            #expect(script.status == 0)
            #expect(Set(script.report["indeterminate"] as? [String] ?? []) == Set(report.indeterminate))
            #expect(script.report["duplicate_deliveries"] as? Int == report.duplicateDeliveries)
            // The storm was a storm: every writer made progress, and kills of every kind happened.
            #expect(results.allSatisfy { $0.confirmedCalls > 0 }, "\(results)")
            #expect(kills >= 3, "the daemon should have been killed repeatedly")
            #expect(results.filter { $0.kills > 0 }.count >= 6, "\(results)")
            #expect((stats.byStatus[500] ?? 0) + (stats.byStatus[429] ?? 0) > 0, "the faults never fired: \(stats)")
            // Library writers retried everything they left unconfirmed.
            let libraryLogs = results.filter { $0.name.hasPrefix("L") }.map(\.log)
            #expect(try WriterHistory.read(logs: libraryLogs).indeterminate.isEmpty)
        }
    }

    /// Starts a daemon, lets it run for a random moment (sometimes before READY=1, mostly mid-pass), SIGKILLs it,
    /// and starts the next, until `until`. Returns the number of kills.
    static func killDaemonRepeatedly(
        _ scenario: BrazeScenario, arguments: [String], until: ContinuousClock.Instant
    ) async throws -> Int {
        var kills = 0
        while ContinuousClock.now < until {
            let daemon = try await scenario.startDaemon(name: "d\(kills)", arguments: arguments, waitForReady: false)
            // The random lifetime is the point (a kill at an unforeseeable moment), not a wait for something.
            try await Task.sleep(for: .milliseconds(Int.random(in: 300...3000)))
            daemon.signal(SIGKILL)
            guard await daemon.waitForExit(timeout: .seconds(30)) != nil else {
                throw ScratchError(message: "a SIGKILLed daemon did not exit")
            }
            kills += 1
            // Sometimes a pause before the restart (a supervisor's back-off), sometimes none: chaos, not a wait.
            if Bool.random() { try await Task.sleep(for: .milliseconds(Int.random(in: 0...500))) }
        }
        return kills
    }
}
