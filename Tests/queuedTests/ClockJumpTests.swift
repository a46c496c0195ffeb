import EventQueue
import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The real `queued` and `queuectl` under a wall clock stepped by an hour while they run (libfaketime; the
/// monotonic clock stays real, as when NTP or an administrator steps a real clock). Leases, due times and the drain
/// lock are wall-clock times in the shared file, so a step must neither park the queue for the hour nor let one
/// daemon deliver a record twice. Every test checks every record: delivered, once, in each user's id order.
///
/// Serialized: each test runs a daemon, and parallel daemons on two cores would only slow each other down.
@Suite(.serialized) struct ClockJumpTests {
    static let hour: Int64 = 3_600_000

    /// What the jsonl sink received, as history-checker deliveries (marker, user, id).
    static func delivered(_ daemon: DaemonProcess) throws -> [HistoryChecker.Delivery] {
        try DeliveredLine.parse(file: daemon.sinkFile).map { line in
            HistoryChecker.Delivery(
                marker: BrazeFault.marker(of: line.object) ?? "?",
                user: line.object["external_id"] as? String ?? "?", id: line.id)
        }
    }

    /// The wall-clock time of the daemon's last pass, from `GET /status`.
    static func lastPassStart(_ daemon: DaemonProcess) async throws -> Date? {
        let state = try await daemon.daemonStatus()
        guard let pass = state["last_pass"] as? [String: Any], let text = pass["started_at"] as? String else {
            return nil
        }
        return parseTime(text)
    }

    static func parseTime(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    // MARK: Step back

    /// A drain interrupted under the old clock left records leased for 60 s, records waiting 2 min for a retry,
    /// and the drain lock held (by a drainer on another host) for 60 s. The daemon's clock then steps back an
    /// hour: all of that now lies an hour in its future. Everything must still go out within a minute, not in an
    /// hour.
    @Test func aClockSteppedBackAnHourStillDeliversEverythingWithinAMinute() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let records = try await BrazeFault.enqueue(MarkedRecord.make(60, users: 10), db: db, in: scratch)
        let now = WallClock.nowMilliseconds()
        let interrupted = try QueueConsumer(path: db, consumerID: "elsewhere.example:4242:interrupted")
        let leased = try interrupted.claim(limit: 5, leaseMilliseconds: 60_000, now: now)
        let waiting = try interrupted.claim(limit: 5, leaseMilliseconds: 60_000, now: now)
        let nacked = try interrupted.nack(
            waiting.records.map(\.id), lease: waiting.lease, reason: "503", retryAt: now + 120_000, now: now)
        let lockTaken = try interrupted.acquireDrainLock(leaseMilliseconds: 60_000, now: now) == nil
        interrupted.close()
        #expect(leased.records.count == 5 && nacked.retried.count == 5 && lockTaken)

        let clock = try await FakeTime(in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db, environment: clock.environment)
        BrazeFault.pumpNotifications(daemon)
        let elapsed = try await withDaemon(daemon) { daemon in
            // Before the step: the lock is held and every user's first record is leased or waiting.
            daemon.signal(SIGUSR1)
            let before = try await daemon.waitUntilIdle(passes: 1)
            let firstPass = before["last_pass"] as? [String: Any]
            #expect(firstPass?["result"] as? String == "another_drainer_running", "\(before)")
            #expect(try Self.delivered(daemon).isEmpty)

            try clock.set("-1h")
            let stepped = ContinuousClock.now
            // No launch from the test: the daemon notices the step itself (ClockJumpWatch) and drains.
            try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(60))
            let elapsed = ContinuousClock.now - stepped
            let passStart = try #require(try await Self.lastPassStart(daemon))
            let shift = passStart.timeIntervalSinceNow
            #expect(shift < -3_000 && shift > -4_200, "the daemon's clock was an hour back: \(shift) s")
            return elapsed
        }
        let report = HistoryChecker.check(enqueued: Set(records.map(\.marker)), delivered: try Self.delivered(daemon))
        expectDeliveredOnce(report)
        #expect(daemon.log.contains("the wall clock was stepped"), "\(daemon.log.suffix(2000))")
        #expect(elapsed < .seconds(60))
        print("ClockJump back 1 h: records 60, all delivered \(elapsed) after the step, \(report)")
    }

    // MARK: Steps of days under the max age

    /// Issue 39 #2: the wall clock stepped 8 days forward for 4 seconds while Braze is down. The pass the step
    /// watcher launches, and the one when the clock comes back, expire nothing: the max age (a week, the default)
    /// is measured on the queue clock, which only the monotonic clock moves (libfaketime leaves `CLOCK_BOOTTIME`
    /// real, as a real step does). A daemon with a working sink then delivers every record. (The step back is
    /// `ClockStepExpiryTests`, in-process: under libfaketime a daemon stepped 8 days back stops running until the
    /// clock returns, which a step of an hour does not do.)
    @Test func aStepOfEightDaysForwardWhileBrazeIsDownExpiresNothing() async throws {
        let step = "+8d"
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let records = try await BrazeFault.enqueue(MarkedRecord.make(300, users: 30), db: db, in: scratch)
        let clock = try await FakeTime(in: scratch)
        let down = try await DaemonProcess(
            scratch: scratch, db: db, name: "down", arguments: ["--sink", "braze:http://127.0.0.1:9"],
            environment: clock.environment.merging(["BRAZE_API_KEY": "clock-test-key-1234"]) { _, given in given })
        let status = try await withDaemon(down) { daemon in
            daemon.signal(SIGUSR1)
            _ = try await daemon.waitUntilIdle(passes: 1)
            func steps() -> Int { daemon.log.components(separatedBy: "the wall clock was stepped").count - 1 }
            try clock.set(step)
            let noticed = await Wait.value(timeout: .seconds(30)) { steps() >= 1 ? true : nil }
            try #require(noticed != nil, "the step was not noticed; log:\n\(daemon.log.suffix(3000))")
            try await Task.sleep(for: .seconds(4))
            let passes = try await daemon.daemonStatus()["passes"] as? Int ?? 0
            try clock.set("+0")
            let noticedBack = await Wait.value(timeout: .seconds(30)) { steps() >= 2 ? true : nil }
            try #require(noticedBack != nil, "the step back was not noticed; log:\n\(daemon.log.suffix(3000))")
            // The pass the step back launched is done.
            _ = try await daemon.waitUntilIdle(passes: passes + 1)
            return try await daemon.status()
        }
        let dropped = status["dropped"] as? [String: Any] ?? [:]
        #expect(dropped["expired"] as? Int == 0, "\(status)")
        #expect(status["pending"] as? Int == 300 && status["dead"] as? Int == 0, "\(status)")

        let up = try await DaemonProcess(scratch: scratch, db: db, name: "up", environment: clock.environment)
        try await withDaemon(up) { daemon in
            daemon.signal(SIGUSR1)
            try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(60))
        }
        let report = HistoryChecker.check(enqueued: Set(records.map(\.marker)), delivered: try Self.delivered(up))
        expectDeliveredOnce(report)
    }

    // MARK: Step forward and back mid-drain

    /// A slow Braze (1 s per request) that fails a quarter of the requests: batches are in flight under
    /// renewed leases, and records wait for retries, when the clock steps an hour forward, and again when it
    /// steps back. The one daemon must deliver every record exactly once, in order, losing nothing.
    @Test func stepsForwardAndBackMidDrainNeitherLoseNorDuplicate() async throws {
        var faults = FakeBrazeFaults()
        faults.seed = 11
        faults.delayMilliseconds = 1_000
        faults.serverErrorRate = 0.25
        try await BrazeScenario.run(records: MarkedRecord.make(80, users: 8), faults: faults) { scenario in
            let clock = try await FakeTime(in: scenario.scratch)
            let daemon = try await scenario.startDaemon(
                arguments: ["--lease-seconds", "2", "--batch-size", "10", "--max-attempts", "30"],
                environment: clock.environment)
            try await withDaemon(daemon) { daemon in
                daemon.signal(SIGUSR1)
                try await waitFor("the first request") { scenario.server.stats().requests >= 1 }
                try clock.set("+1h")
                try await waitFor("three more requests", timeout: .seconds(60)) {
                    scenario.server.stats().requests >= 4
                }
                try clock.set("+0")
                try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(90))
            }
            let report = scenario.expectDeliveredOnce()
            let stats = scenario.server.stats()
            #expect((stats.byStatus[500] ?? 0) > 0, "the 500s fired, so records waited for retries: \(stats)")
            let steps = daemon.log.components(separatedBy: "the wall clock was stepped").count - 1
            #expect(steps >= 2, "both steps noticed: \(daemon.log.suffix(3000))")
            #expect(!daemon.log.contains("lease lapsed"), "\(daemon.log.suffix(3000))")
            print("ClockJump forward+back: records 80, requests \(stats.requests), steps noticed \(steps), \(report)")
        }
    }

    // MARK: A lease lost while the sink is slow

    /// Another consumer's clock runs an hour ahead of the daemon's, so the daemon's leases (renewed every 0.67 s)
    /// look long expired to it: renewal cannot protect the batch in flight. While Braze takes 3 s over the first
    /// batch, that consumer claims those records and hands them back. The daemon's renewal must notice, its late
    /// result must be discarded (its ack names a lease that no longer holds them), and the next claim must deliver
    /// each of them exactly once more: twice in all at Braze (the late request went out), never three times,
    /// nothing lost. (The other consumer's clock is its `now`, not libfaketime: see `FakeTime` on timers.)
    @Test func aLateResultAfterTheLeaseWasLostIsDiscardedAndDeliveredExactlyOnceMore() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 3_000
        try await BrazeScenario.run(records: MarkedRecord.make(20, users: 4), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon(arguments: ["--lease-seconds", "2", "--batch-size", "10"])
            var taken: [Int64] = []
            try await withDaemon(daemon) { daemon in
                daemon.signal(SIGUSR1)
                try await waitFor("the first request") { scenario.server.stats().requests >= 1 }
                let other = try QueueConsumer(path: scenario.db, consumerID: "other-consumer")
                let claim = try other.claim(
                    limit: 10, leaseMilliseconds: 60_000, now: WallClock.nowMilliseconds() + Self.hour)
                taken = claim.records.map(\.id)
                try other.release(taken, lease: claim.lease)
                other.close()
                #expect(scenario.server.stats().requests == 1, "taken while the first request was still unanswered")
                try await BrazeFault.waitUntilSettled(daemon, dead: 0)
            }
            let firstBatch = Array(scenario.records.prefix(10))
            #expect(taken == firstBatch.map(\.id), "the other consumer took exactly the batch in flight")
            let report = scenario.expectNothingLostOrReordered()
            #expect(
                report.duplicated == Dictionary(uniqueKeysWithValues: firstBatch.map { ($0.marker, 2) }), "\(report)")
            #expect(daemon.log.contains("late results will be discarded"), "\(daemon.log.suffix(3000))")
            print("ClockJump lease lost: records 20, requests \(scenario.server.stats().requests), \(report)")
        }
    }

    // MARK: Writers on other clocks

    /// Three writer processes an hour behind, on time, and an hour ahead of the daemon, writing for the same
    /// users at once while it drains. The id, not any clock, orders records: every record arrives once, in each
    /// user's id order, and the event times show each writer's own clock.
    @Test func writersAnHourOffTheDaemonsClockAreDeliveredInIdOrder() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--drain-interval", "0.5"])
        BrazeFault.pumpNotifications(daemon)
        let clock = try await FakeTime(in: scratch)
        let offsets = ["-1h", "+0", "+1h"]
        let rounds = 6
        let perRound = 20
        let expected = try await withDaemon(daemon) { daemon in
            let markers = try await withThrowingTaskGroup(of: [String].self) { group in
                for (writer, offset) in offsets.enumerated() {
                    group.addTask {
                        var written: [String] = []
                        for round in 0..<rounds {
                            let batch = MarkedRecord.make(perRound, users: 5, prefix: "w\(writer)r\(round)n")
                            let lines = batch.map(\.line).joined(separator: "\n") + "\n"
                            let result = try await queuectl(
                                ["enqueue", "--ndjson", "-"], db: db, stdin: lines,
                                environment: clock.environment(offset: offset), in: scratch)
                            guard result.status == 0 else {
                                throw ScratchError(message: "writer \(offset) failed: \(result.stderr)")
                            }
                            written += batch.map(\.marker)
                        }
                        return written
                    }
                }
                var all: [String] = []
                for try await markers in group { all += markers }
                return all
            }
            try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(60))
            return Set(markers)
        }
        let lines = try DeliveredLine.parse(file: daemon.sinkFile)
        let report = HistoryChecker.check(enqueued: expected, delivered: try Self.delivered(daemon))
        #expect(expected.count == offsets.count * rounds * perRound)
        expectDeliveredOnce(report)
        // Each writer stamped its events with its own clock: proof the writers really ran an hour off.
        for (writer, expectedShift) in [(0, -3_600.0), (1, 0.0), (2, 3_600.0)] {
            let times = lines.filter { (BrazeFault.marker(of: $0.object) ?? "").hasPrefix("w\(writer)r") }
                .compactMap { ($0.object["time"] as? String).flatMap(Self.parseTime) }
            let shifts = times.map { $0.timeIntervalSinceNow }
            #expect(!shifts.isEmpty)
            #expect(
                shifts.allSatisfy { abs($0 - expectedShift) < 600 }, "writer \(writer): \(shifts.prefix(3))")
        }
        print("ClockJump writers ±1 h: \(report)")
    }

    // MARK: Two daemons, one clock 20 minutes ahead (issue 16, defect 5)

    /// Two daemons on one file, one under libfaketime at +20 min: its clock reads the other's drain lock and
    /// leases as long expired. A live process on this host keeps its lock whatever the clocks say, so the two
    /// never drain at once and no batch is delivered twice (before the fix: one batch reached Braze 5 times).
    @Test func twoDaemonsWithClocksTwentyMinutesApartNeverDeliverABatchTwice() async throws {
        var faults = FakeBrazeFaults()
        faults.seed = 16
        faults.serverErrorRate = 0.1
        faults.delayMilliseconds = 600
        try await BrazeScenario.run(records: MarkedRecord.make(300, users: 30), faults: faults) { scenario in
            let clock = try await FakeTime(in: scenario.scratch)
            let arguments = [
                "--lease-seconds", "4", "--batch-size", "25", "--drain-interval", "1", "--max-attempts", "50",
            ]
            let onTime = try await scenario.startDaemon(name: "on-time", arguments: arguments)
            let ahead = try await scenario.startDaemon(
                name: "ahead", arguments: arguments, environment: clock.environment(offset: "+20m"))
            try await withDaemon(onTime) { onTime in
                try await withDaemon(ahead) { ahead in
                    try await waitFor("every record delivered", timeout: .seconds(120)) {
                        Set(BrazeFault.received(scenario.server).filter(\.accepted).map(\.marker)) == scenario.markers
                    }
                    _ = try await BrazeFault.waitUntilSettled(onTime, dead: 0, timeout: .seconds(60))
                    #expect(!ahead.log.contains(scenario.key) && !onTime.log.contains(scenario.key))
                }
            }
            let report = scenario.expectDeliveredOnce()
            print("ClockJump two daemons, +20 min apart: \(report)")
        }
    }
}
