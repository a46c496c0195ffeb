import EventQueue
import EventQueueDelivery

#if canImport(Glibc)
    import Glibc  // exp, log
#endif

/// When one host may send its next `/users/track` request: every rate decision of a `BrazeSink`, as a value, so
/// that the daemon (`BrazeRateGovernor`) and the fleet simulation (`BrazeFleetSimulation`) run the same decisions.
/// Time comes in as an argument (`Moment`): nothing here reads a clock or sleeps.
///
/// The behaviour (pacing on `X-RateLimit-Remaining`/`-Reset`, one probe per new window, 429 rounds and their
/// pause floor, `--max-requests-per-second`) is described in docs/OPERATING.md, "Braze". Sharers S are measured
/// as how fast `remaining` falls against this host's own answers; slow start (one request in flight, one more
/// per answer) lets a fleet learn S before it paces.
package struct BrazeRatePolicy: Sendable {
    /// What to do now.
    package enum Decision: Sendable, Hashable {
        /// Send; hand the ticket to `release` with the answer.
        case start(Ticket)
        case wait(until: Duration)
        /// Nothing may start until an answer comes in.
        case waitForAnswer
    }

    /// The 429 round current when a request started.
    package struct Ticket: Sendable, Hashable {
        var round: Int
    }

    /// What an answer says about the rate.
    package enum Feedback: Sendable, Hashable {
        case answered(BrazeRateHeaders)
        /// A 429; `hintMilliseconds` from `Retry-After`, else the reset, relative to now.
        case rateLimited(BrazeRateHeaders, hintMilliseconds: Int64?)
        /// No answer: says nothing about the rate.
        case noAnswer
    }

    /// The last reading: how much of the window was left, and when it resets.
    struct Reading: Sendable, Hashable {
        var remaining: Int
        var resetAtMilliseconds: Int64
        /// The delay after the reset of the next window's first request (drawn once per window).
        var jitterMilliseconds: Int64
        /// `remaining` at the window's first reading and this host's answers since: the sharers' measure.
        var firstRemaining: Int = 0
        var ownAnswers = 0
        /// Foreseen, not read (see `blockedUntil`); any answer replaces it.
        var predicted = false
    }

    let maxWindow: Int
    let maxRequestsPerSecond: Int?

    /// The longest wait a header imposes at once (a bogus header must not stop delivery for a day); Braze is
    /// then asked again.
    static let resetHorizon: Int64 = 900_000
    /// The first 429 round's pause floor, doubled per round in a row up to `pauseCap`.
    static let pauseFloor: Int64 = 100
    static let pauseCap: Int64 = 60_000
    /// Braze's documented window, until two readings show another.
    static let defaultWindowMilliseconds: Int64 = 3_000
    static let jitterShare = 0.03

    private(set) var window: Int
    private(set) var inFlight = 0
    /// Hosts (or other integrations) spending the window, as measured; kept from one window to the next.
    private(set) var sharers: Double = 1
    private var recentAnswers: [Duration] = []
    private var lastStart: Duration?
    private var reading: Reading?
    private var limit: Int?
    /// Whether answers carry the rate headers: without them pacing is off (a destination that sends none must
    /// not be held to one request at a time).
    private var headersSeen = true
    private var windowMilliseconds: Int64?
    private var pausedUntil: Duration?
    private var round = 0
    /// 429 rounds in a row (reset by an answer to a request of the current round).
    private(set) var streak = 0
    private var random: SplitMix64
    /// The counters of `BrazeRateStatus`.
    private var waits = 0
    private var waitedMilliseconds: Int64 = 0
    private var rateLimitedAnswers = 0
    private var rateLimitRounds = 0

    package init(maxWindow: Int, maxRequestsPerSecond: Int?, seed: UInt64) {
        self.maxWindow = max(1, maxWindow)
        self.maxRequestsPerSecond = maxRequestsPerSecond.map { max(1, $0) }
        window = 1  // slow start
        random = SplitMix64(seed: seed)
    }

    /// Whether a request may start now; one that may is counted in flight.
    package mutating func decide(at now: Moment) -> Decision {
        if let blocked = blockedUntil(at: now) { return blocked }
        inFlight += 1
        lastStart = now.monotonic
        return .start(Ticket(round: round))
    }

    /// A request started with `ticket` ended: counts it out of flight and learns from its answer.
    package mutating func release(_ ticket: Ticket, _ feedback: Feedback, at now: Moment) {
        inFlight = max(0, inFlight - 1)
        if maxRequestsPerSecond != nil { recentAnswers.append(now.monotonic) }
        switch feedback {
        case .answered(let headers):
            absorb(headers, at: now)
            if ticket.round == round { streak = 0 }
            window = min(maxWindow, window + 1)
        case .rateLimited(let headers, let hint):
            if headers.retryAfterMilliseconds != nil {
                // `Retry-After` wins over the reset: after it, one probe asks again.
                var limitOnly = BrazeRateHeaders()
                limitOnly.limit = headers.limit
                absorb(limitOnly, at: now)
                headersSeen = true
                reading = Reading(remaining: 0, resetAtMilliseconds: now.wallMilliseconds, jitterMilliseconds: 0)
            } else {
                absorb(headers, at: now)
                if headers.remaining == nil, var current = reading,
                    current.resetAtMilliseconds > now.wallMilliseconds
                {
                    current.remaining = 0
                    reading = current
                }
            }
            rateLimitedAnswers += 1
            // The other 429s of an overshoot a round already answered change nothing.
            guard ticket.round == round else { return }
            round += 1
            streak += 1
            rateLimitRounds += 1
            window = max(1, window / 2)
            let floor = min(Self.pauseFloor << min(streak - 1, 20), Self.pauseCap)
            var pause = floor
            if let hint, hint > 0 { pause = max(min(hint, Self.resetHorizon), floor) }
            let until = now.monotonic + .milliseconds(pause + jitter())
            if pausedUntil.map({ $0 < until }) ?? true { pausedUntil = until }
        case .noAnswer:
            break
        }
    }

    mutating func recordWait(milliseconds: Int64) {
        waits += 1
        waitedMilliseconds += max(0, milliseconds)
    }

    func snapshot(at now: Moment) -> BrazeRateStatus {
        var copy = self
        var waitingUntil: Int64?
        if case .wait(let until)? = copy.blockedUntil(at: now) {
            waitingUntil = now.wallMilliseconds + (until - now.monotonic).wholeMilliseconds
        }
        return BrazeRateStatus(
            requestsInFlight: inFlight, window: window, rateLimitWaits: waits,
            rateLimitWaitSeconds: Double(waitedMilliseconds) / 1000, rateLimitedRequests: rateLimitedAnswers,
            rateLimitRounds: rateLimitRounds, limit: limit, remaining: reading?.remaining,
            resetAtMilliseconds: reading?.resetAtMilliseconds, waitingUntilMilliseconds: waitingUntil)
    }

    // MARK: Deciding

    /// What holds the next request back, or `nil` when it may start.
    private mutating func blockedUntil(at now: Moment) -> Decision? {
        if let pausedUntil, pausedUntil > now.monotonic { return .wait(until: pausedUntil) }
        pausedUntil = nil
        if let limit = maxRequestsPerSecond {
            let cutoff = now.monotonic - .seconds(1)
            recentAnswers.removeAll { $0 <= cutoff }
            if inFlight + recentAnswers.count >= limit {
                // The oldest answer leaves the second first; with none, wait for one.
                return recentAnswers.first.map { Decision.wait(until: $0 + .seconds(1)) } ?? .waitForAnswer
            }
        }
        if inFlight >= window { return .waitForAnswer }
        guard headersSeen else { return nil }
        // Nothing read yet: one request first, so a fleet starting together does not burst into one window.
        guard let reading else { return inFlight > 0 ? .waitForAnswer : nil }
        let untilReset = reading.resetAtMilliseconds - now.wallMilliseconds
        if untilReset > 0, untilReset <= Self.resetHorizon {
            let afterReset = now.monotonic + .milliseconds(untilReset + reading.jitterMilliseconds)
            // What is left once every sharer's requests in flight are counted, so together they never have more
            // out than the window holds; this host's part is `left / S^0.5`: the power below 1 makes a larger
            // share weigh less, so shares converge to equal (S alone would let a host that got ahead keep its lead).
            let left = Double(reading.remaining) - sharers * Double(inFlight)
            let share = left / Self.fairnessWeight(sharers)
            if share <= 0 {
                // The window's last requests are out: their answers may show room, else wait for the reset.
                if reading.remaining > 0, inFlight > 0 { return .waitForAnswer }
                return .wait(until: afterReset)
            }
            // Alone on the window, what is left is this host's to use at once. "Alone" is strict (a fall at most
            // 2 % over this host's spend): a looser test let a host that got ahead starve the others.
            if reading.ownAnswers >= Self.aloneAfterAnswers, sharers <= Self.aloneAtMost { return nil }
            if let lastStart {
                let next = lastStart + .milliseconds(untilReset) * (1 / share)
                if next > now.monotonic { return .wait(until: min(next, afterReset)) }
            }
            return nil
        }
        // The window that passed had a quarter of its limit to spare: the next one starts full. Pace on that
        // rather than stop for a probe, which would cost a round trip every window.
        if untilReset <= 0, !reading.predicted, let limit, reading.remaining * 4 >= limit {
            let window = windowMilliseconds ?? Self.defaultWindowMilliseconds
            let reset = reading.resetAtMilliseconds + (-untilReset / window + 1) * window
            self.reading = Reading(
                remaining: limit, resetAtMilliseconds: reset, jitterMilliseconds: reading.jitterMilliseconds,
                firstRemaining: limit, predicted: true)
            return blockedUntil(at: now)
        }
        // The reading is of a past window (or its reset is implausible): one request at a time until an answer
        // reads the new window, the first a little after the reset.
        if inFlight > 0 { return .waitForAnswer }
        if untilReset <= 0, -untilReset < reading.jitterMilliseconds {
            return .wait(until: now.monotonic + .milliseconds(reading.jitterMilliseconds + untilReset))
        }
        return nil
    }

    private mutating func absorb(_ headers: BrazeRateHeaders, at now: Moment) {
        guard headers.remaining != nil || headers.resetAtMilliseconds != nil || headers.limit != nil else {
            headersSeen = false
            return
        }
        headersSeen = true
        if let limit = headers.limit { self.limit = limit }
        guard let remaining = headers.remaining, let reset = headers.resetAtMilliseconds else { return }
        if var current = reading, !current.predicted {
            if reset == current.resetAtMilliseconds {
                // Answers come back out of order: a window's lowest count is the latest.
                current.remaining = min(current.remaining, remaining)
                current.ownAnswers += 1
                if current.ownAnswers >= Self.answersToMeasureSharers {
                    let fall = Double(max(0, current.firstRemaining - current.remaining))
                    sharers = min(Self.maxSharers, max(1, fall / Double(current.ownAnswers)))
                }
                reading = current
                return
            }
            // A late answer from a past window says nothing about this one.
            if reset < current.resetAtMilliseconds { return }
            let step = reset - current.resetAtMilliseconds
            if step <= Self.resetHorizon { windowMilliseconds = min(windowMilliseconds ?? step, step) }
        }
        reading = Reading(
            remaining: remaining, resetAtMilliseconds: reset, jitterMilliseconds: jitter(), firstRemaining: remaining)
    }

    /// S^0.5 (see the pacing in `blockedUntil`).
    static func fairnessWeight(_ sharers: Double) -> Double {
        sharers <= 1 ? 1 : exp(0.5 * log(sharers))
    }

    /// Sharers of at most this, over at least `aloneAfterAnswers` own answers in the window: alone on it.
    static let aloneAtMost = 1.02
    static let aloneAfterAnswers = 20

    /// Own answers in a window before its fall counts the sharers, and the most sharers believed.
    static let answersToMeasureSharers = 3
    static let maxSharers: Double = 10_000

    /// Up to 3 % of the window (20 to 250 ms), so hosts do not come back in step.
    private mutating func jitter() -> Int64 {
        let window = windowMilliseconds ?? Self.defaultWindowMilliseconds
        let most = min(250, max(20, Int64(Double(window) * Self.jitterShare)))
        return Int64(random.next() % UInt64(most + 1))
    }

}
