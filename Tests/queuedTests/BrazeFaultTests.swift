import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The real `queued` and `queuectl` against an in-process fake `/users/track` that injects one fault at a time.
/// Every test checks the outcome of every record: delivered exactly once at the fake (in each user's order),
/// dead with the expected reason, or still pending with the expected attempts; and lost = 0.
///
/// Serialized: each test runs a daemon, and on two shared cores parallel daemons would only slow each other
/// into their deadlines.
@Suite(.serialized) struct BrazeFaultTests {
    // MARK: 1. Healthy

    @Test func healthyDeliversEveryRecordOnceWithinLimitsAndInUserOrder() async throws {
        try await BrazeScenario.run(
            records: MarkedRecord.make(300, users: 20, kinds: ["attribute", "event", "purchase"])
        ) { scenario in
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
                #expect(drain.stdout.hasPrefix("delivered 300, retried 0, dead 0"), "\(drain.stdout)")
                try await BrazeFault.waitUntilSettled(daemon, dead: 0)
            }
            let report = scenario.expectDeliveredOnce()
            let received = BrazeFault.received(scenario.server)
            #expect(received.allSatisfy { $0.accepted })
            var perArray: [String: Int] = [:]
            for object in received { perArray["\(object.request)/\(object.array)", default: 0] += 1 }
            #expect(perArray.values.allSatisfy { $0 <= 75 }, "\(perArray.filter { $0.value > 75 })")
            let stats = scenario.server.stats()
            #expect(stats.byStatus.keys.allSatisfy { $0 == 201 }, "\(stats)")
            #expect(!daemon.log.contains(scenario.key))
            print("BrazeFault healthy: records 300, requests \(stats.requests), \(report)")
        }
    }

    // MARK: 2. 500s

    @Test func serverErrorsAreRetriedUntilEverythingIsDeliveredOnce() async throws {
        var faults = FakeBrazeFaults()
        faults.seed = 42
        faults.serverErrorRate = 0.3
        try await BrazeScenario.run(records: MarkedRecord.make(200, users: 10), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(arguments: ["--max-attempts", "20"])
            try await withDaemon(daemon) { daemon in
                daemon.signal(SIGUSR1)
                // Only the one launch: the daemon schedules its own passes at the next retry time.
                try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(90))
            }
            // A 500 means nothing was applied, so nothing may arrive twice.
            let report = scenario.expectDeliveredOnce()
            #expect(try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch).isEmpty)
            let stats = scenario.server.stats()
            #expect((stats.byStatus[500] ?? 0) > 0, "the fault never fired: \(stats)")
            #expect(!daemon.log.contains(scenario.key))
            print(
                "BrazeFault 500s: records 200, requests \(stats.requests), 500s \(stats.byStatus[500] ?? 0), "
                    + "\(report)")
        }
    }

    // MARK: 3. 429 storm

    @Test func rateLimitStormWaitsForTheResetWithoutSpendingAttempts() async throws {
        var faults = FakeBrazeFaults()
        faults.rateLimitNextRequests = 3
        faults.rateLimitResetAfterSeconds = 2
        try await BrazeScenario.run(records: MarkedRecord.make(150, users: 10), faults: faults) { scenario in
            // One attempt only: a 429 counted as an attempt would dead-letter the record at once.
            let daemon = try await scenario.startDaemon(arguments: ["--max-attempts", "1"])
            try await withDaemon(daemon) { daemon in
                #expect(try await daemon.request("POST", "/launch").status == 202)
                try await waitFor("the first 429") { (scenario.server.stats().byStatus[429] ?? 0) >= 1 }
                // Back-pressure, not failure: the records stay leased (in flight) while the sink waits for the
                // window, and the pass goes on once it opens.
                let waiting = try await BrazeFault.peek(db: scenario.db, in: scenario.scratch)
                #expect(waiting.allSatisfy { $0["attempts"] as? Int == 0 }, "\(waiting.prefix(3))")
                try await BrazeFault.waitUntilSettled(daemon, dead: 0)
                let status = try await daemon.daemonStatus()
                #expect(status["passes"] as? Int == 1, "the 429s ended no pass: \(status)")
            }
            let report = scenario.expectDeliveredOnce()
            #expect(try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch).isEmpty)
            let stats = scenario.server.stats()
            #expect(stats.byStatus[429] == 3, "\(stats)")
            #expect(!daemon.log.contains(scenario.key))
            #expect(!daemon.log.contains("drain pass stopped early"))
            print(
                "BrazeFault 429: records 150, requests \(stats.requests), 429s \(stats.byStatus[429] ?? 0), \(report)")
        }
    }

    // MARK: 4. 201 with errors

    @Test func objectsNamedInErrorsAreDeadAndTheRestDelivered() async throws {
        let marker = "REJECT-ME"
        let records = MarkedRecord.make(120, users: 12, kinds: ["attribute", "event", "purchase"]) {
            $0 % 10 == 3 ? marker : nil
        }
        let refused = Set(records.filter { $0.flag != nil }.map(\.marker))
        var faults = FakeBrazeFaults()
        faults.rejectMarker = marker
        try await BrazeScenario.run(records: records, faults: faults) { scenario in
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 10, "\(drain.stdout) \(drain.stderr)")
                try await BrazeFault.waitUntilSettled(daemon, dead: refused.count)
            }
            let dead = try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch)
            #expect(Set(dead.keys) == refused)
            #expect(dead.values.allSatisfy { $0.hasPrefix("Braze rejected it") }, "\(dead)")
            let report = scenario.expectDeliveredOnce(scenario.markers.subtracting(refused))
            let refusedAtFake = BrazeFault.received(scenario.server).filter { !$0.accepted }.map(\.marker)
            #expect(refusedAtFake.count == refused.count && Set(refusedAtFake) == refused, "sent once each")
            #expect(!daemon.log.contains(scenario.key))
            print(
                "BrazeFault 201+errors: records 120, requests \(scenario.server.stats().requests), dead \(dead.count), "
                    + "\(report)")
        }
    }

    // MARK: 5. 400 for a poison record

    @Test func aPoisonRecordIsIsolatedByBisectionAndNeverBlocksTheQueue() async throws {
        let poison = "POISON-PILL"
        var faults = FakeBrazeFaults()
        faults.poisonMarker = poison
        let records = MarkedRecord.make(100, users: 10) { $0 == 37 ? poison : nil }
        try await BrazeScenario.run(records: records, faults: faults) { scenario in
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 10, "\(drain.stdout) \(drain.stderr)")
                #expect(drain.stdout.hasPrefix("delivered 99, retried 0, dead 1"), "\(drain.stdout)")
                try await BrazeFault.waitUntilSettled(daemon, dead: 1)
            }
            let dead = try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch)
            #expect(Array(dead.keys) == ["m37"])
            #expect(dead["m37"]?.hasPrefix("Braze rejected it: 400") == true, "\(dead)")
            let report = scenario.expectDeliveredOnce(scenario.markers.subtracting(["m37"]))
            let stats = scenario.server.stats()
            #expect((stats.byStatus[400] ?? 0) >= 7, "75 records bisect down to one in at least 7 steps: \(stats)")
            #expect(!daemon.log.contains(scenario.key))
            print(
                "BrazeFault poison: records 100, requests \(stats.requests), 400s \(stats.byStatus[400] ?? 0), "
                    + "\(report)")
        }
    }

    /// Issue 40 #2, against the daemon: a record that makes Braze answer 503 every time while it answers the rest.
    /// Its batch-mates are delivered in the first pass; the record alone counts an attempt each time and is a dead
    /// letter after `--max-attempts`, with a reason naming the 503; then its user's later records go on, in order.
    /// (Before: every request of its batch failed, nothing was delivered, and the sink was "unavailable" until the
    /// max age.)
    @Test func aRecordBrazeAnswers5xxForDiesAfterItsAttemptsAndNeverStallsTheHost() async throws {
        let marker = "FAILS-EVERY-TIME"
        var faults = FakeBrazeFaults()
        faults.serverErrorMarker = marker
        let records = MarkedRecord.make(100, users: 10) { $0 == 37 ? marker : nil }
        try await BrazeScenario.run(records: records, faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(arguments: ["--max-attempts", "2"])
            try await withDaemon(daemon) { daemon in
                let started = ContinuousClock.now
                // Everything but m37 and its user's later records: at the first probe that leaves m37's users out
                // (the sink has answered nothing yet, so the first failures look like an outage).
                let user = try #require(scenario.records.first { $0.marker == "m37" }?.user)
                let held = Set(scenario.records.drop { $0.marker != "m37" }.filter { $0.user == user }.map(\.marker))
                try await waitFor("m37's batch-mates delivered", timeout: .seconds(60), every: .milliseconds(200)) {
                    _ = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                    let delivered = Set(BrazeFault.received(scenario.server).map(\.marker))
                    if !delivered.isDisjoint(with: held.subtracting(["m37"])) {
                        // Read after the deliveries: a later record went only after m37 was dead (on a busy
                        // machine its two attempts can be spent before this loop sees every batch-mate).
                        let dead = try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch)
                        #expect(dead["m37"] != nil, "m37's user's later records wait until it is dead: \(delivered)")
                    }
                    return delivered.isSuperset(of: scenario.markers.subtracting(held))
                }
                let mates = ContinuousClock.now - started
                var dead: [String: String] = [:]
                try await waitFor("m37 dead", timeout: .seconds(60), every: .milliseconds(500)) {
                    _ = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                    dead = try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch)
                    return !dead.isEmpty
                }
                #expect(Array(dead.keys) == ["m37"])
                #expect(dead["m37"]?.contains("gave up after 2 attempts") == true, "\(dead)")
                #expect(dead["m37"]?.contains("503") == true, "\(dead)")
                try await BrazeFault.waitUntilSettled(daemon, dead: 1)
                print("BrazeFault 503 poison: batch-mates delivered after \(mates)")
            }
            scenario.expectDeliveredOnce(scenario.markers.subtracting(["m37"]))
        }
    }

    // MARK: 6. 401 mid-drain

    @Test func unauthorizedMidDrainStopsKeepsRecordsAndResumesAfterTheFix() async throws {
        var faults = FakeBrazeFaults()
        faults.unauthorizedAfterRequests = 2
        try await BrazeScenario.run(records: MarkedRecord.make(200, users: 10), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(arguments: ["--batch-size", "25"])
            try await withDaemon(daemon) { daemon in
                let halted = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(halted.status == 12, "\(halted.stdout) \(halted.stderr)")
                let status = try await BrazeFault.waitUntilSettled(daemon, pending: 150)
                #expect(status["leased"] as? Int == 0)
                let state = try #require(status["daemon"] as? [String: Any])
                let sink = try #require(state["sink"] as? [String: Any])
                #expect(sink["healthy"] as? Bool == false, "\(state)")
                #expect((sink["last_error"] as? String ?? "").contains("401"), "\(state)")
                #expect((state["last_error"] as? String ?? "").contains("401"), "\(state)")
                let lastPass = try #require(state["last_pass"] as? [String: Any])
                #expect(lastPass["result"] as? String == "sink_misconfigured", "\(lastPass)")

                let pending = try await BrazeFault.peek(db: scenario.db, in: scenario.scratch)
                #expect(pending.count == 150)
                #expect(pending.allSatisfy { $0["attempts"] as? Int == 0 }, "\(pending.prefix(3))")
                #expect(pending.allSatisfy { $0["state"] as? String == "pending" }, "\(pending.prefix(3))")
                let deliveredSoFar = Set(BrazeFault.received(scenario.server).map(\.marker))
                #expect(deliveredSoFar == Set(scenario.records.prefix(50).map(\.marker)))
                #expect(scenario.server.stats().byStatus[401] == 1, "\(scenario.server.stats())")

                scenario.server.setFaults(.none)
                let resumed = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(resumed.status == 0, "\(resumed.stdout) \(resumed.stderr)")
                let settled = try await BrazeFault.waitUntilSettled(daemon, dead: 0)
                let healthy = (settled["daemon"] as? [String: Any])?["sink"] as? [String: Any]
                #expect(healthy?["healthy"] as? Bool == true, "\(settled)")
            }
            let report = scenario.expectDeliveredOnce()
            #expect(!daemon.log.contains(scenario.key))
            print("BrazeFault 401: records 200, requests \(scenario.server.stats().requests), \(report)")
        }
    }

    // MARK: 7. Dropped connections and mid-response resets

    @Test func droppedConnectionsAndResetsLoseNothing() async throws {
        let batch = 50
        var faults = FakeBrazeFaults()
        faults.seed = 7
        faults.dropConnectionRate = 0.15
        faults.resetMidResponseRate = 0.15
        try await BrazeScenario.run(records: MarkedRecord.make(200, users: 10), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(
                arguments: ["--max-attempts", "20", "--batch-size", "\(batch)"])
            try await withDaemon(daemon) { daemon in
                daemon.signal(SIGUSR1)
                try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(90))
            }
            let report = scenario.expectNothingLostOrReordered()
            let stats = scenario.server.stats()
            #expect(stats.dropped + stats.resetMidResponse > 0, "the faults never fired: \(stats)")
            // The fake records a request's objects before it decides to drop the connection or cut the answer,
            // so both model "Braze applied it, the client never heard". Each such request can come back once.
            let unanswered = stats.dropped + stats.resetMidResponse
            #expect(report.duplicateDeliveries <= unanswered * batch, "\(report); \(stats)")
            // Every duplicate's first copy travelled in a request that got no complete answer.
            let received = BrazeFault.received(scenario.server)
            var firstRequest: [String: Int] = [:]
            var resentRequests: Set<Int> = []
            for object in received where object.accepted {
                if let first = firstRequest[object.marker] {
                    resentRequests.insert(first)
                } else {
                    firstRequest[object.marker] = object.request
                }
            }
            #expect(resentRequests.count <= unanswered, "\(resentRequests.sorted()); \(stats)")
            #expect(!daemon.log.contains(scenario.key))
            print(
                "BrazeFault drops/resets: records 200, requests \(stats.requests), dropped \(stats.dropped), "
                    + "reset \(stats.resetMidResponse), duplicated requests \(resentRequests.count), \(report)")
        }
    }

    // MARK: 8. Slow responses beyond the lease

    @Test func slowResponsesBeyondTheLeaseAreNotDeliveredTwice() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 2500
        try await BrazeScenario.run(records: MarkedRecord.make(60, users: 6), faults: faults) { scenario in
            let arguments = ["--lease-seconds", "1", "--batch-size", "20"]
            let daemon = try await scenario.startDaemon(arguments: arguments)
            try await withDaemon(daemon) { daemon in
                // A second daemon on the same file, launched while the first is mid-request: the renewed drain
                // lock and record leases must keep it from sending anything twice.
                let rival = try await scenario.startDaemon(name: "rival", arguments: arguments)
                try await withDaemon(rival) { rival in
                    daemon.signal(SIGUSR1)
                    try await waitFor("the first slow request") { scenario.server.stats().requests >= 1 }
                    // Launch the rival several times while the first request (2.5 s) is unanswered, so its
                    // tries span more than the 1 s lease: only renewals keep the lock and the records held.
                    var rivalPasses = 0
                    var tries = 0
                    while scenario.server.stats().requests < 2, tries < 6 {
                        tries += 1
                        rival.signal(SIGUSR1)
                        let state = try await rival.waitUntilIdle(passes: rivalPasses + 1, timeout: .seconds(10))
                        rivalPasses = state["passes"] as? Int ?? rivalPasses + 1
                        try await Task.sleep(for: .milliseconds(300))  // pacing between launches, not a wait
                    }
                    #expect(tries >= 3, "the rival tried during the slow request: \(tries)")
                    let rivalPass = try await rival.daemonStatus()["last_pass"] as? [String: Any]
                    #expect(rivalPass?["result"] as? String == "another_drainer_running", "\(rivalPass ?? [:])")
                    try await BrazeFault.waitUntilSettled(daemon, dead: 0)
                    _ = try await rival.waitUntilIdle(passes: 1)
                    #expect(!rival.log.contains(scenario.key))
                }
            }
            let report = scenario.expectDeliveredOnce()
            let stats = scenario.server.stats()
            #expect(stats.requests == 3, "one request per batch of 20, none repeated: \(stats)")
            #expect(!daemon.log.contains("lease lapsed"), "\(daemon.log.suffix(3000))")
            #expect(!daemon.log.contains(scenario.key))
            print("BrazeFault slow: records 60, requests \(stats.requests), \(report)")
        }
    }

    // MARK: 9. The key never leaks

    @Test func theKeyFromTheEnvironmentNeverAppearsInLogsStatusMetricsOrArgv() async throws {
        var faults = FakeBrazeFaults()
        faults.unauthorizedAfterRequests = 0  // every request 401 until cleared: errors get logged
        try await BrazeScenario.run(records: MarkedRecord.make(30, users: 3), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let halted = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(halted.status == 12, "\(halted.stdout) \(halted.stderr)")
                #expect(!halted.stdout.contains(scenario.key) && !halted.stderr.contains(scenario.key))
                try await Self.expectNoKey(scenario.key, in: daemon)
                var transient = FakeBrazeFaults()
                transient.serverErrorRate = 1
                scenario.server.setFaults(transient)
                _ = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                try await Self.expectNoKey(scenario.key, in: daemon)
                scenario.server.setFaults(.none)
                // The 500s scheduled a retry; wait for it, or launch once more.
                _ = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                try await BrazeFault.waitUntilSettled(daemon, dead: 0)
                try await Self.expectNoKey(scenario.key, in: daemon)
            }
            #expect(!daemon.log.contains(scenario.key))
            #expect(daemon.log.contains("401"), "the 401 was logged (so the check above means something)")
            let report = scenario.report()
            #expect(report.lost.isEmpty && report.duplicateDeliveries == 0, "\(report)")
        }
    }

    @Test func theKeyFromAKeyFileIsUsedAndNeverLeaks() async throws {
        try await BrazeScenario.run(records: MarkedRecord.make(20, users: 4)) { scenario in
            let keyFile = scenario.scratch.file("braze.key")
            try Data((scenario.key + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
            chmod(keyFile, 0o600)
            let daemon = try await scenario.startDaemon(keyFile: keyFile)
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 0, "the fake checks the key: \(drain.stdout) \(drain.stderr)")
                try await BrazeFault.waitUntilSettled(daemon, dead: 0)
                try await Self.expectNoKey(scenario.key, in: daemon)
                let environment = FileManager.default.contents(atPath: "/proc/\(daemon.pid)/environ") ?? Data()
                #expect(!String(decoding: environment, as: UTF8.self).contains(scenario.key))
                #expect(BrazeFault.commandLine(of: daemon.pid).contains("--api-key-file"))
            }
            #expect(!daemon.log.contains(scenario.key))
            let report = scenario.report()
            #expect(report.lost.isEmpty && report.duplicateDeliveries == 0, "\(report)")
        }
    }

    /// The key is absent from the stderr log, `GET /status`, `GET /metrics` and `/proc/PID/cmdline`.
    static func expectNoKey(_ key: String, in daemon: DaemonProcess) async throws {
        let status = try await daemon.request("GET", "/status")
        let metrics = try await daemon.request("GET", "/metrics")
        #expect(status.status == 200 && metrics.status == 200)
        #expect(!status.body.contains(key), "status: \(status.body)")
        #expect(!metrics.body.contains(key))
        #expect(!metrics.body.isEmpty)
        let commandLine = BrazeFault.commandLine(of: daemon.pid)
        #expect(commandLine.contains("queued"), "cmdline readable: \(commandLine)")
        #expect(!commandLine.contains(key))
        #expect(!daemon.log.contains(key))
        #expect(!daemon.log.contains("Bearer"))
    }
}
