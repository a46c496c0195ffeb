import EventQueueDelivery
import Logging

/// Paces one `BrazeSink`'s requests, shared by all its deliveries in flight: `BrazeRatePolicy` decides, this
/// actor waits where it says and logs what an operator should see (a 429 round starting, the limit lifting).
actor BrazeRateGovernor {
    private var policy: BrazeRatePolicy
    private let logger: Logger
    private let clock: any DrainClock
    /// True while a 429 streak is on (for logging it once, and its end).
    private var limited = false

    /// The longest an acquire waits for an answer before it decides again (an answer wakes every waiter; this
    /// bound is for what time alone changes, a reset; docs/PERFORMANCE.md: why not a poll).
    static let answerWaitLimit: Duration = .milliseconds(100)
    /// The acquires waiting for an answer, by the number `waitForAnswer` gave each.
    private var answerWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var lastWaiter: UInt64 = 0

    init(
        maxWindow: Int, maxRequestsPerSecond: Int?, logger: Logger, clock: any DrainClock = SystemDrainClock(),
        seed: UInt64 = UInt64.random(in: 0...UInt64.max)
    ) {
        policy = BrazeRatePolicy(maxWindow: maxWindow, maxRequestsPerSecond: maxRequestsPerSecond, seed: seed)
        self.logger = logger
        self.clock = clock
    }

    var snapshot: BrazeRateStatus { policy.snapshot(at: clock.moment()) }

    /// Waits until a request may start, then counts it in flight. `nil` only when the task is cancelled; the
    /// caller then sends nothing.
    func acquire() async -> BrazeRatePolicy.Ticket? {
        let started = clock.monotonic()
        var waited = false
        while !Task.isCancelled {
            let now = clock.moment()
            switch policy.decide(at: now) {
            case .start(let ticket):
                if waited { policy.recordWait(milliseconds: (now.monotonic - started).wholeMilliseconds) }
                return ticket
            case .wait(let until):
                waited = true
                // The actor is free while this task sleeps: other deliveries keep answering and releasing.
                try? await clock.sleep(for: until - now.monotonic)
            case .waitForAnswer:
                waited = true
                await waitForAnswer()
            }
        }
        return nil
    }

    /// Counts a request out of flight and learns from its answer.
    func release(_ ticket: BrazeRatePolicy.Ticket, _ feedback: BrazeRatePolicy.Feedback) {
        // A new 429 round is a step up of the streak; the snapshot is taken only for the log lines.
        let streakBefore = policy.streak
        let now = clock.moment()
        policy.release(ticket, feedback, at: now)
        wakeAnswerWaiters()
        if policy.streak > streakBefore, !limited {
            limited = true
            let after = policy.snapshot(at: now)
            logger.warning(
                "braze rate limit: waiting for the window",
                metadata: [
                    "wait_ms":
                        "\(after.waitingUntilMilliseconds.map { "\(max(0, $0 - clock.wallMilliseconds()))" } ?? "0")",
                    "remaining": "\(after.remaining.map { "\($0)" } ?? "unknown")",
                    "limit": "\(after.limit.map { "\($0)" } ?? "unknown")", "window": "\(after.window)",
                ])
        } else if limited, policy.streak == 0 {
            limited = false
            let answers = policy.snapshot(at: now).rateLimitedRequests
            logger.notice("braze rate limit lifted", metadata: ["rate_limited_answers": "\(answers)"])
        }
    }

    /// Suspends until an answer comes in, `answerWaitLimit` passes, or the task is cancelled. The continuation is
    /// stored before this actor runs anything else, so neither the timer nor a cancellation can miss it.
    private func waitForAnswer() async {
        lastWaiter &+= 1
        let waiter = lastWaiter
        let clock = self.clock
        let timer = Task { [weak self] in
            guard (try? await clock.sleep(for: Self.answerWaitLimit)) != nil else { return }
            await self?.wake(waiter)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in answerWaiters[waiter] = continuation }
        } onCancel: {
            Task { [weak self] in await self?.wake(waiter) }
        }
        timer.cancel()
    }

    /// How many acquires are waiting for an answer now (for tests: they wait for a request to be parked).
    var waitingForAnswer: Int { answerWaiters.count }

    private func wake(_ waiter: UInt64) {
        answerWaiters.removeValue(forKey: waiter)?.resume()
    }

    private func wakeAnswerWaiters() {
        let waiters = answerWaiters.values
        answerWaiters.removeAll(keepingCapacity: true)
        for waiter in waiters { waiter.resume() }
    }
}
