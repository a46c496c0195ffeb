import EventQueue
import Logging
import Synchronization

/// Turns launches into drain passes, one at a time: the daemon's launch logic, kept apart from its transport
/// (signals, the control socket, timers, systemd) so that it runs, and is tested, in-process.
///
/// Any number of launches during a pass become exactly one more pass after it (one pending flag). After a pass a
/// timer is set for the follow-up (`scheduleFollowUp`). The drain lock keeps other processes out; this actor keeps
/// this process to one pass.
public actor LaunchCoordinator {
    /// The drainer the passes run (its `availability` is read by the daemon's status and metrics).
    public nonisolated let drainer: Drainer
    private nonisolated let clock: any DrainClock
    private let observer: any LaunchObserver
    private nonisolated let logger: Logger
    /// Wakes the pass loop; what it wakes up for is `launchPending`. One slot: wake-ups never pile up.
    private let wakeUps: AsyncStream<Void>
    private nonisolated let wakeUp: AsyncStream<Void>.Continuation
    private nonisolated let launchPending = Flag()
    private nonisolated let stopRequested = Flag()
    /// A launch (rather than a timer) asked for the next pass: it may bring a probe forward.
    private nonisolated let probeRequested = Flag()

    private var state = LaunchState.idle
    private var passes = 0
    private var lastPass: PassRecord?
    private var nextRetryAt: Int64?
    private var lastError: String?
    private var recordsInFlight = 0
    private var followersOfNextPass: [AsyncStream<PassEvent>.Continuation] = []
    private var followersOfThisPass: [AsyncStream<PassEvent>.Continuation] = []
    private var retryTimer: Task<Void, Never>?

    /// `clock` should be the drainer's (the default), so the due times it writes and the timers agree.
    public init(
        drainer: Drainer, observer: any LaunchObserver, logger: Logger, clock: (any DrainClock)? = nil
    ) {
        self.drainer = drainer
        self.clock = clock ?? drainer.clock
        self.observer = observer
        self.logger = logger
        (wakeUps, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a pass; safe from any context (a signal loop, a timer).
    public nonisolated func launch() {
        probeRequested.set()
        launchPending.set()
        wakeUp.yield()
    }

    /// Asks for a pass and follows it: the events of the next pass to start, ending with its summary.
    public func launchAndFollow() -> AsyncStream<PassEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: PassEvent.self)
        if stopRequested.isSet {
            continuation.yield(.failed("queued is stopping; no pass will run", cause: nil))
            continuation.finish()
            return events
        }
        followersOfNextPass.append(continuation)
        launch()
        return events
    }

    /// Stops taking launches; the pass under way claims nothing more and settles the batches it has in flight.
    public nonisolated func requestStop() {
        stopRequested.set()
        wakeUp.finish()
    }

    public func snapshot() -> LaunchSnapshot {
        LaunchSnapshot(
            state: stopRequested.isSet ? .stopping : state, passes: passes, lastPass: lastPass,
            nextRetryAtMilliseconds: nextRetryAt, lastError: lastError, inFlight: recordsInFlight,
            launchPending: launchPending.isSet, sink: drainer.availability.snapshot)
    }

    /// Runs passes as launches arrive, until `requestStop()` (after the pass in flight) or cancellation.
    public func run() async {
        for await _ in wakeUps {
            if stopRequested.isSet || Task.isCancelled { break }
            // A wake-up whose launch an earlier pass already took runs nothing.
            guard launchPending.take() else { continue }
            await runPass()
        }
        retryTimer?.cancel()
        for follower in followersOfNextPass + followersOfThisPass {
            follower.yield(.failed("queued stopped before the pass ran", cause: nil))
            follower.finish()
        }
        followersOfNextPass = []
        followersOfThisPass = []
    }

    /// Runs passes until `stop` returns, then stops taking launches and gives the pass in flight up to
    /// `shutdownTimeout` to finish before cancelling it. Returns whether the pass loop ended in time.
    public nonisolated func run(
        until stop: @escaping @Sendable () async -> Void, shutdownTimeout: Duration
    ) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await self.run()
                return true
            }
            group.addTask {
                await stop()
                self.requestStop()
                try? await self.clock.sleep(for: shutdownTimeout)
                return false
            }
            let passLoopFinished = await group.next() ?? false
            if !passLoopFinished {
                logger.warning(
                    "the batch in flight did not finish within the shutdown timeout; cancelling it and releasing its records"
                )
            }
            group.cancelAll()
            return passLoopFinished
        }
    }

    private func runPass() async {
        state = .draining
        passes += 1
        observer.passStarted(passes)
        followersOfThisPass = followersOfNextPass
        followersOfNextPass = []
        retryTimer?.cancel()
        retryTimer = nil
        nextRetryAt = nil
        if probeRequested.take() { drainer.availability.requestProbe() }
        let started = clock.wallMilliseconds()
        let start = clock.monotonic()
        let stopFlag = self.stopRequested
        do {
            let summary = try await drainer.drain(
                progress: { [weak self] summary in await self?.report(.progress(summary)) },
                shouldStop: { [stopFlag] in stopFlag.isSet })
            lastPass = PassRecord(
                startedAtMilliseconds: started, endedAtMilliseconds: clock.wallMilliseconds(), summary: summary)
            if let halt = summary.halt { lastError = halt.description }
            report(.summary(summary))
            scheduleFollowUp(after: summary)
            observer.passFinished(summary, duration: clock.elapsed(since: start))
        } catch {
            logger.error("drain pass failed", metadata: ["error": "\(error)"])
            lastError = error.description
            lastPass = PassRecord(
                startedAtMilliseconds: started, endedAtMilliseconds: clock.wallMilliseconds(), summary: nil,
                error: error.description)
            report(.failed(error.description, cause: error))
            if case .busy = error { schedule(at: clock.wallMilliseconds() &+ Self.busyRetryMilliseconds) }
            observer.passFailed(error, duration: clock.elapsed(since: start))
        }
        for follower in followersOfThisPass { follower.finish() }
        followersOfThisPass = []
        state = .idle
    }

    private func report(_ event: PassEvent) {
        recordsInFlight = if case .progress(let summary) = event { summary.inFlight } else { 0 }
        observer.recordsInFlight(recordsInFlight)
        for follower in followersOfThisPass { follower.yield(event) }
    }

    /// The first retry's due time, a held lock's expiry, or while the sink is unavailable the next probe (the
    /// records are due at once and would wake passes that claim nothing); a misconfigured sink waits for a launch.
    private func scheduleFollowUp(after summary: DrainSummary) {
        if summary.result != .sinkMisconfigured, let probe = drainer.availability.snapshot.nextProbeAtMilliseconds,
            let wait = drainer.availability.untilNextProbe()
        {
            // Timed on the monotonic side, rounded up: a timer a fraction of a millisecond early would find the
            // probe not yet due and run a pass for nothing.
            let (seconds, attoseconds) = wait.components
            schedule(
                at: probe,
                delayMilliseconds: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            return
        }
        switch summary.result {
        case .sinkMisconfigured:
            return
        case .anotherDrainerRunning:
            if let holder = summary.lockHolder {
                // Saturating: the expiry was read from the queue file.
                let (after, overflow) = holder.expiresAtMilliseconds.addingReportingOverflow(100)
                schedule(at: overflow ? .max : after)
            }
        case .allDelivered, .someDead, .recordsRemain:
            if let next = summary.remaining?.nextRetryAtMilliseconds { schedule(at: next) }
        }
    }

    /// Arms the follow-up timer for wall-clock time `milliseconds`, waiting on the monotonic side, capped at the
    /// horizon so a time written under a clock that went back cannot park the daemon.
    private func schedule(at milliseconds: Int64, delayMilliseconds: Int64? = nil) {
        retryTimer?.cancel()
        nextRetryAt = milliseconds
        let delay =
            delayMilliseconds.map { min(max(50, $0), ClockHorizon.longestWaitMilliseconds) }
            ?? Self.delay(until: milliseconds, now: clock.wallMilliseconds())
        retryTimer = Task { [clock, launchPending, wakeUp] in
            do {
                try await clock.sleep(for: .milliseconds(delay))
            } catch {
                return  // cancelled: a pass started first, or the coordinator stopped
            }
            launchPending.set()
            wakeUp.yield()
        }
    }

    /// The wait before a follow-up pass due at wall-clock `target`: at least 50 ms, at most the clock horizon.
    static func delay(until target: Int64, now: Int64) -> Int64 {
        let (remaining, overflow) = target.subtractingReportingOverflow(now)
        if overflow { return target < 0 ? 50 : ClockHorizon.longestWaitMilliseconds }
        return min(max(50, remaining), ClockHorizon.longestWaitMilliseconds)
    }

    /// How long a pass that found the file busy waits before the next try.
    static let busyRetryMilliseconds: Int64 = 5_000
}

/// What the coordinator tells its host about passes: the daemon turns these into metrics and systemd status
/// lines; tests await them. Called on the coordinator's actor: keep them short and non-blocking.
public protocol LaunchObserver: Sendable {
    /// A pass starts (`passes` counts it).
    func passStarted(_ passes: Int)
    /// Records handed to the sink and not settled yet, after every batch (0 when the pass ends).
    func recordsInFlight(_ count: Int)
    /// A pass ended with `summary` after `duration` (monotonic, on the coordinator's clock).
    func passFinished(_ summary: DrainSummary, duration: Duration)
    /// A pass failed on a queue error after `duration`.
    func passFailed(_ error: QueueError, duration: Duration)
}

extension LaunchObserver {
    public func passStarted(_ passes: Int) {}
    public func recordsInFlight(_ count: Int) {}
    public func passFinished(_ summary: DrainSummary, duration: Duration) {}
    public func passFailed(_ error: QueueError, duration: Duration) {}
}

/// What the launch coordinator is doing, as the daemon's `GET /status` reports it.
public enum LaunchState: String, Sendable {
    case idle, draining, stopping
}

/// The coordinator's state, copied out in one piece for a status request (or a test).
public struct LaunchSnapshot: Sendable {
    public var state: LaunchState
    /// Passes started since the coordinator was created.
    public var passes: Int
    public var lastPass: PassRecord?
    /// When the follow-up pass is scheduled (wall-clock milliseconds): the first retry's due time, or a held
    /// drain lock's expiry.
    public var nextRetryAtMilliseconds: Int64?
    public var lastError: String?
    /// Records handed to the sink and not settled yet (0 between passes).
    public var inFlight = 0
    /// A launch arrived that no pass has started for yet: one more pass will run.
    public var launchPending = false
    /// Whether the sink is available, and when it is not, since when, why and the next probe.
    public var sink: SinkAvailability.Snapshot?
}

/// What a follower of a pass (`POST /launch?wait=true`, `queuectl drain --wait`) receives.
public enum PassEvent: Sendable {
    /// After every batch: the counts so far.
    case progress(DrainSummary)
    /// The pass ended.
    case summary(DrainSummary)
    /// The pass failed on a queue error (`cause`), or the daemon stopped before it could run (`cause` is nil).
    /// The cause travels to the follower so that it exits as `drain --local` would (75 when the queue was busy).
    case failed(String, cause: QueueError?)
}

/// One finished pass, for `GET /status`.
public struct PassRecord: Sendable {
    public var startedAtMilliseconds: Int64
    public var endedAtMilliseconds: Int64
    /// `nil` when the pass failed on a queue error (see `error`).
    public var summary: DrainSummary?
    public var error: String?

    public init(
        startedAtMilliseconds: Int64, endedAtMilliseconds: Int64, summary: DrainSummary?, error: String? = nil
    ) {
        self.startedAtMilliseconds = startedAtMilliseconds
        self.endedAtMilliseconds = endedAtMilliseconds
        self.summary = summary
        self.error = error
    }
}

/// A one-way-or-taken flag read from whatever thread: "stop requested", "a launch is pending".
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }

    /// Clears the flag; returns whether it was set.
    func take() -> Bool { value.exchange(false, ordering: .acquiringAndReleasing) }
}
