import EventQueue
import Testing

@testable import EventQueueDelivery

/// The daemon's launch logic, in-process: a real queue file, a scripted sink, and a clock the test moves. Every
/// wait is for an event (a sink entered, a pass ended, a timer went to sleep), never for the wall clock.
@Suite(.timeLimit(.minutes(2)))
struct LaunchCoordinatorTests {
    let directory = Scratch()
    var path: String { directory.queuePath }

    /// A coordinator over a new drainer for `path`, on `clock`; the caller stops it and closes the store.
    func makeCoordinator(
        sink: any Sink, clock: ManualClock, options: DrainOptions = DrainOptions(batchSize: 10)
    ) throws -> (LaunchCoordinator, PassWatcher, Drainer) {
        let drainer = try makeDrainer(path, sink: sink, options: options, clock: clock)
        let watcher = PassWatcher()
        return (LaunchCoordinator(drainer: drainer, observer: watcher, logger: quietLogger), watcher, drainer)
    }

    // MARK: - Coalescing

    @Test func manyLaunchesDuringAPassBecomeExactlyOneMorePass() async throws {
        let ids = try enqueue((0..<3).map { testEvent("e\($0)", user: "u\($0)") }, at: path)
        let entered = Signal()
        let proceed = Signal()
        let sink = ScriptedSink.holding(entered: entered, until: proceed, onlyFirst: true)
        let (coordinator, watcher, drainer) = try makeCoordinator(sink: sink, clock: ManualClock())
        let loop = Task { await coordinator.run() }

        coordinator.launch()
        await entered.wait()
        for _ in 0..<20 { coordinator.launch() }
        let during = await coordinator.snapshot()
        #expect(during.state == .draining)
        #expect(during.passes == 1)
        #expect(during.launchPending, "the launches wait for the pass in flight")

        proceed.fire()
        await watcher.waitForPassEnds(2)
        let after = await coordinator.snapshot()
        #expect(after.passes == 2, "21 launches, \(after.passes) passes")
        #expect(!after.launchPending, "no third pass is owed")
        #expect(after.state == .idle)
        #expect(sink.batchIDs == [ids], "the second pass found nothing left")
        #expect(watcher.ends.map { $0?.delivered } == [3, 0])

        coordinator.requestStop()
        await loop.value
        await drainer.store.close()
    }

    @Test func aLaunchWhileIdleStartsAPassAtOnce() async throws {
        try enqueue([testEvent("e", user: "u")], at: path)
        let sink = ScriptedSink.acceptingEverything()
        let (coordinator, watcher, drainer) = try makeCoordinator(sink: sink, clock: ManualClock())
        let loop = Task { await coordinator.run() }
        coordinator.launch()
        await watcher.waitForPassEnds(1)
        let snapshot = await coordinator.snapshot()
        #expect(snapshot.passes == 1)
        #expect(snapshot.lastPass?.summary?.result == .allDelivered)
        #expect(snapshot.nextRetryAtMilliseconds == nil, "nothing waits for a retry: no follow-up is scheduled")
        coordinator.requestStop()
        await loop.value
        await drainer.store.close()
    }

    // MARK: - Follow-up passes

    @Test func aFollowUpPassRunsWhenTheFirstRetryComesDue() async throws {
        let id = try #require(try enqueue([testEvent("e", user: "u")], at: path).first)
        let sink = ScriptedSink { call, _ in
            call == 0 ? .retry(reason: "HTTP 503", afterMilliseconds: 30_000, cause: .backPressure) : .delivered
        }
        let clock = ManualClock()
        let start = clock.wallMilliseconds()
        let (coordinator, watcher, drainer) = try makeCoordinator(sink: sink, clock: clock)
        let loop = Task { await coordinator.run() }

        coordinator.launch()
        await watcher.waitForPassEnds(1)
        let afterFirst = await coordinator.snapshot()
        #expect(afterFirst.lastPass?.summary?.retried == 1)
        #expect(afterFirst.nextRetryAtMilliseconds == start + 30_000, "the follow-up is set for the retry's due time")

        await clock.waitForSleepers(1)  // the follow-up timer
        clock.advance(by: .milliseconds(29_999))
        #expect(clock.sleepers == 1, "1 ms early: the timer still waits")
        clock.advance(by: .milliseconds(1))
        await watcher.waitForPassEnds(2)

        let afterSecond = await coordinator.snapshot()
        #expect(afterSecond.passes == 2, "no launch but the timer's")
        #expect(afterSecond.lastPass?.summary?.delivered == 1)
        #expect(afterSecond.nextRetryAtMilliseconds == nil)
        #expect(sink.ids == [id, id])
        #expect(try liveRecords(path).isEmpty)

        coordinator.requestStop()
        await loop.value
        await drainer.store.close()
    }

    @Test func aMisconfiguredSinkGetsNoFollowUpPass() async throws {
        try enqueue([testEvent("e", user: "u")], at: path)
        let halt = SinkHalt(kind: .configuration, reason: "HTTP 401: invalid API key")
        let sink = ScriptedSink { _, _ in DeliveryReport(halt: halt) }
        let clock = ManualClock()
        let (coordinator, watcher, drainer) = try makeCoordinator(sink: sink, clock: clock)
        let loop = Task { await coordinator.run() }
        coordinator.launch()
        await watcher.waitForPassEnds(1)
        let snapshot = await coordinator.snapshot()
        #expect(snapshot.lastPass?.summary?.result == .sinkMisconfigured)
        #expect(snapshot.lastError == halt.description)
        #expect(snapshot.nextRetryAtMilliseconds == nil, "retrying cannot fix a wrong key: wait for a launch")
        #expect(clock.sleepers == 0, "no timer armed")
        coordinator.requestStop()
        await loop.value
        await drainer.store.close()
    }

    @Test func theFollowUpWaitStaysWithinTheClockHorizon() {
        let now: Int64 = 1_800_000_000_000
        #expect(LaunchCoordinator.delay(until: now + 10, now: now) == 50, "at least 50 ms")
        #expect(LaunchCoordinator.delay(until: now - 60_000, now: now) == 50, "a past due time: at once")
        #expect(LaunchCoordinator.delay(until: now + 30_000, now: now) == 30_000)
        #expect(
            LaunchCoordinator.delay(until: now + 3_600_000, now: now) == ClockHorizon.longestWaitMilliseconds,
            "a time written under a clock that went back cannot park the daemon")
        #expect(LaunchCoordinator.delay(until: .max, now: -5) == ClockHorizon.longestWaitMilliseconds)
        #expect(LaunchCoordinator.delay(until: .min, now: 5) == 50)
    }

    // MARK: - An unavailable sink (issue 30)

    /// While the sink is unavailable the records are due at once (no backoff of their own): the follow-up pass
    /// must be the next probe's, not theirs, or the daemon would wake for passes that claim nothing.
    @Test func whileTheSinkIsUnavailableTheFollowUpPassIsTheNextProbe() async throws {
        try enqueue((0..<6).map { testEvent("e\($0)", user: "u\($0)") }, at: path)
        let down = Locked(true)
        let sink = ScriptedSink { _, record in
            down.value ? .retry(reason: "Braze answered 503", cause: .destination) : .delivered
        }
        let clock = ManualClock()
        let (coordinator, watcher, drainer) = try makeCoordinator(
            sink: sink, clock: clock, options: DrainOptions(batchSize: 2))
        let loop = Task { await coordinator.run() }
        coordinator.launch()
        await watcher.waitForPassEnds(1)
        let snapshot = await coordinator.snapshot()
        let probeAt = try #require(snapshot.sink?.nextProbeAtMilliseconds)
        #expect(snapshot.sink?.state == .unavailable)
        #expect(snapshot.nextRetryAtMilliseconds == probeAt, "the follow-up is the probe")
        #expect(watcher.ends.first??.halt?.kind == .unavailable)
        let calls = sink.callCount

        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(probeAt - clock.wallMilliseconds() - 1))
        #expect(watcher.ends.count == 1, "no pass before the probe is due")
        down.withLock { $0 = false }
        clock.advance(by: .milliseconds(1))
        await watcher.waitForPassEnds(2)
        #expect(sink.callCount > calls)
        #expect(watcher.ends.last??.result == .allDelivered)
        #expect(await coordinator.snapshot().sink?.state == .available)
        #expect(try liveRecords(path).isEmpty)

        coordinator.requestStop()
        await loop.value
        await drainer.store.close()
    }

    /// An app's launch is often the first sign that the network is back: it probes at once.
    @Test func aLaunchWhileTheSinkIsUnavailableProbesAtOnce() async throws {
        try enqueue((0..<4).map { testEvent("e\($0)", user: "u\($0)") }, at: path)
        let down = Locked(true)
        let sink = ScriptedSink { _, _ in
            down.value ? .retry(reason: "connection refused", cause: .destination) : .delivered
        }
        let clock = ManualClock()
        // The first probe a minute away: a launch must not wait for it.
        let options = DrainOptions(
            batchSize: 2, availability: SinkAvailability.Policy(firstProbeDelay: .seconds(60)))
        let (coordinator, watcher, drainer) = try makeCoordinator(sink: sink, clock: clock, options: options)
        let loop = Task { await coordinator.run() }
        coordinator.launch()
        await watcher.waitForPassEnds(1)
        #expect(await coordinator.snapshot().sink?.state == .unavailable)
        let calls = sink.callCount
        down.withLock { $0 = false }
        coordinator.launch()
        await watcher.waitForPassEnds(2)
        #expect(sink.callCount > calls, "the launch probed without the clock moving")
        #expect(watcher.ends.last??.result == .allDelivered)
        #expect(try liveRecords(path).isEmpty)

        coordinator.requestStop()
        await loop.value
        await drainer.store.close()
    }

    // MARK: - drain --wait

    @Test func aFollowerSeesEveryBatchsProgressThenTheSummary() async throws {
        try enqueue((0..<5).map { testEvent("e\($0)", user: "u\($0)") }, at: path)
        let sink = ScriptedSink.acceptingEverything()
        let (coordinator, _, drainer) = try makeCoordinator(
            sink: sink, clock: ManualClock(), options: DrainOptions(batchSize: 2))
        let loop = Task { await coordinator.run() }

        var seen: [String] = []
        for await event in await coordinator.launchAndFollow() {
            switch event {
            case .progress(let summary): seen.append("progress \(summary.batches): delivered \(summary.delivered)")
            case .summary(let summary): seen.append("summary: delivered \(summary.delivered), \(summary.result)")
            case .failed(let message, _): seen.append("failed: \(message)")
            }
        }
        #expect(
            seen == [
                "progress 1: delivered 2", "progress 2: delivered 4", "progress 3: delivered 5",
                "summary: delivered 5, allDelivered",
            ])
        #expect(await coordinator.snapshot().inFlight == 0)

        coordinator.requestStop()
        await loop.value
        await drainer.store.close()
    }

    @Test func aFollowerIsToldWhenNoPassWillRun() async throws {
        let (coordinator, watcher, drainer) = try makeCoordinator(
            sink: ScriptedSink.acceptingEverything(), clock: ManualClock())
        let loop = Task { await coordinator.run() }
        coordinator.requestStop()
        await loop.value
        var messages: [String] = []
        for await event in await coordinator.launchAndFollow() {
            if case .failed(let message, _) = event { messages.append(message) }
        }
        #expect(messages == ["queued is stopping; no pass will run"])
        #expect(watcher.ends.isEmpty)
        #expect(await coordinator.snapshot().state == .stopping)
        await drainer.store.close()
    }

    // MARK: - Shutdown

    /// Starts the coordinator (batches of 2, a 30 s shutdown timeout), launches a pass, waits until the sink holds
    /// the first batch, then asks for the stop and waits until it has begun (two sleepers: the lease renewal and
    /// the shutdown timeout). Returns the run, whose value says whether the pass finished in time.
    func stopDuringTheFirstBatch(
        sink: ScriptedSink, entered: Signal
    ) async throws -> (run: Task<Bool, Never>, clock: ManualClock, coordinator: LaunchCoordinator, drainer: Drainer) {
        let clock = ManualClock()
        let (coordinator, _, drainer) = try makeCoordinator(
            sink: sink, clock: clock, options: DrainOptions(batchSize: 2))
        let stop = Signal()
        let run = Task { await coordinator.run(until: { await stop.wait() }, shutdownTimeout: .seconds(30)) }
        coordinator.launch()
        await entered.wait()
        stop.fire()
        await clock.waitForSleepers(2)
        return (run, clock, coordinator, drainer)
    }

    @Test func shutdownStopsClaimingAndWaitsForTheBatchInFlight() async throws {
        let ids = try enqueue((0..<4).map { testEvent("e\($0)", user: "u\($0)") }, at: path)
        let entered = Signal()
        let proceed = Signal()
        let sink = ScriptedSink.holding(entered: entered, until: proceed, onlyFirst: true)
        let (run, clock, coordinator, drainer) = try await stopDuringTheFirstBatch(sink: sink, entered: entered)
        #expect(await coordinator.snapshot().state == .stopping)
        proceed.fire()
        let finishedInTime = await run.value

        #expect(finishedInTime)
        #expect(sink.batchIDs == [Array(ids.prefix(2))], "no claim after the stop")
        #expect(clock.sleepers == 0, "the timeout's wait ended with the pass")
        let live = try liveRecords(path)
        #expect(live.keys.sorted() == Array(ids.dropFirst(2)), "the batch in flight was delivered and acked")
        #expect(live.values.allSatisfy { $0.state == .pending && $0.attempts == 0 })
        await drainer.store.close()
    }

    @Test func shutdownCancelsAPassThatOutlivesTheTimeoutAndReleasesItsRecords() async throws {
        let ids = try enqueue((0..<4).map { testEvent("e\($0)", user: "u\($0)") }, at: path)
        let entered = Signal()
        let never = Signal()
        let sink = ScriptedSink { _, batch in
            entered.fire()
            await never.wait()  // returns only when the delivery is cancelled
            return Task.isCancelled ? DeliveryReport() : DeliveryReport(.delivered, for: batch)
        }
        let (run, clock, _, drainer) = try await stopDuringTheFirstBatch(sink: sink, entered: entered)
        clock.advance(by: .seconds(30))
        let finishedInTime = await run.value

        #expect(!finishedInTime)
        #expect(sink.batchIDs == [Array(ids.prefix(2))])
        let live = try liveRecords(path)
        #expect(live.keys.sorted() == ids, "nothing delivered, nothing lost")
        #expect(live.values.allSatisfy { $0.state == .pending }, "released, not left leased")
        #expect(live.values.allSatisfy { $0.attempts == 0 }, "a shutdown is not the record's fault")
        await drainer.store.close()
    }
}
