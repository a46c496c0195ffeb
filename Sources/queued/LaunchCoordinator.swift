import EventQueue
import EventQueueDelivery
import Logging
import Synchronization

/// Turns launches into drain passes, one at a time.
///
/// Launches (SIGUSR1, the control socket, `--drain-on-start`, the interval, retry timers) start a pass when the
/// daemon is idle; any number of launches during a pass become exactly one more pass after it (a one-slot
/// buffer). The drain lock in the database keeps other processes out; this actor keeps this process to one pass.
actor LaunchCoordinator {
    private let drainer: Drainer
    private let metrics: DaemonMetrics
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let launches: AsyncStream<Void>
    private nonisolated let launchContinuation: AsyncStream<Void>.Continuation
    private nonisolated let stopRequested = StopFlag()

    private var state = DaemonState.idle
    private var passes = 0
    private var lastPass: PassRecord?
    private var nextRetryAt: Int64?
    private var lastError: String?
    private var recordsInFlight = 0
    private var followersOfNextPass: [AsyncStream<PassEvent>.Continuation] = []
    private var followersOfThisPass: [AsyncStream<PassEvent>.Continuation] = []
    private var retryTimer: Task<Void, Never>?

    init(drainer: Drainer, metrics: DaemonMetrics, notifier: SystemdNotifier, logger: Logger) {
        self.drainer = drainer
        self.metrics = metrics
        self.notifier = notifier
        self.logger = logger
        (launches, launchContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a pass; safe from any context (a signal loop, a timer).
    nonisolated func launch() {
        launchContinuation.yield()
    }

    /// Asks for a pass and follows it: the events of the next pass to start, ending with its summary.
    func launchAndFollow() -> AsyncStream<PassEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: PassEvent.self)
        if stopRequested.isSet {
            continuation.yield(.failed("queued is stopping; no pass will run"))
            continuation.finish()
            return events
        }
        followersOfNextPass.append(continuation)
        launchContinuation.yield()
        return events
    }

    /// Stops taking launches; the pass in flight stops claiming after its current batch.
    nonisolated func requestStop() {
        stopRequested.set()
        launchContinuation.finish()
    }

    func snapshot() -> DaemonSnapshot {
        DaemonSnapshot(
            state: stopRequested.isSet ? .stopping : state, passes: passes, lastPass: lastPass,
            nextRetryAtMilliseconds: nextRetryAt, lastError: lastError, inFlight: recordsInFlight)
    }

    /// Runs passes as launches arrive, until `requestStop()` (after the pass in flight) or cancellation.
    func run() async {
        for await _ in launches {
            if stopRequested.isSet || Task.isCancelled { break }
            await runPass()
        }
        retryTimer?.cancel()
        for follower in followersOfNextPass + followersOfThisPass {
            follower.yield(.failed("queued stopped before the pass ran"))
            follower.finish()
        }
        followersOfNextPass = []
        followersOfThisPass = []
    }

    private func runPass() async {
        state = .draining
        passes += 1
        followersOfThisPass = followersOfNextPass
        followersOfNextPass = []
        retryTimer?.cancel()
        retryTimer = nil
        nextRetryAt = nil
        let started = WallClock.nowMilliseconds()
        let clock = ContinuousClock()
        let start = clock.now
        let stopFlag = self.stopRequested
        do {
            let summary = try await drainer.drain(
                progress: { [weak self] summary in await self?.report(.progress(summary)) },
                shouldStop: { [stopFlag] in stopFlag.isSet })
            metrics.recordPass(summary, duration: clock.now - start)
            lastPass = PassRecord(
                startedAtMilliseconds: started, endedAtMilliseconds: WallClock.nowMilliseconds(), summary: summary)
            if let halt = summary.halt { lastError = halt.description }
            report(.summary(summary))
            scheduleFollowUp(after: summary)
            notifier.status(
                "pending \(summary.remaining?.pending ?? 0); last pass \(summary.result.rawValue) "
                    + "(delivered \(summary.delivered), dead \(summary.dead))")
        } catch {
            metrics.recordFailedPass(duration: clock.now - start)
            logger.error("drain pass failed", metadata: ["error": "\(error)"])
            lastError = error.description
            lastPass = PassRecord(
                startedAtMilliseconds: started, endedAtMilliseconds: WallClock.nowMilliseconds(), summary: nil,
                error: error.description)
            report(.failed(error.description))
            if case .busy = error { schedule(at: WallClock.nowMilliseconds() + 5_000) }
            notifier.status("last pass failed: \(error.description)")
        }
        for follower in followersOfThisPass { follower.finish() }
        followersOfThisPass = []
        state = .idle
    }

    private func report(_ event: PassEvent) {
        if case .progress(let summary) = event {
            recordsInFlight = summary.inFlight
            metrics.recordInFlight(summary.inFlight)
        } else {
            recordsInFlight = 0
            metrics.recordInFlight(0)
        }
        for follower in followersOfThisPass { follower.yield(event) }
    }

    /// Records waiting for a retry get a pass when the first comes due; a held lock is tried again when it
    /// expires; a misconfigured sink waits for the next launch (retrying cannot fix a wrong key).
    private func scheduleFollowUp(after summary: DrainSummary) {
        switch summary.result {
        case .sinkMisconfigured:
            return
        case .anotherDrainerRunning:
            if let holder = summary.lockHolder {
                // Saturating: the expiry was read from the queue file.
                schedule(
                    at: holder.expiresAtMilliseconds.addingReportingOverflow(100).overflow
                        ? Int64.max : holder.expiresAtMilliseconds + 100)
            }
        case .allDelivered, .someDead, .recordsRemain:
            if let next = summary.remaining?.nextRetryAtMilliseconds { schedule(at: next) }
        }
    }

    private func schedule(at milliseconds: Int64) {
        retryTimer?.cancel()
        nextRetryAt = milliseconds
        // The wait is measured on the monotonic clock (Task.sleep) once scheduled; the wall-clock target is
        // capped at the horizon, so a time written under a clock that went back cannot park the daemon.
        let (remaining, overflow) = milliseconds.subtractingReportingOverflow(WallClock.nowMilliseconds())
        let delay =
            overflow
            ? (milliseconds < 0 ? 50 : ClockHorizon.longestWaitMilliseconds)
            : min(max(50, remaining), ClockHorizon.longestWaitMilliseconds)
        let continuation = launchContinuation
        retryTimer = Task {
            try? await Task.sleep(for: .milliseconds(delay))
            if !Task.isCancelled { continuation.yield() }
        }
    }
}

/// A one-way flag read by the drainer before every claim, from whatever thread it runs on.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}
