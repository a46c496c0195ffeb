import EventQueue
import EventQueueDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// When one host may send its next `/users/track` request: every rate decision of a `BrazeSink`, as a value.
///
/// Why a value and not the actor itself: the same decisions must run in the daemon (`BrazeRateGovernor`, which
/// only sleeps where this says to wait) and in the fleet simulation (`BrazeFleetSimulation`, hundreds of hosts
/// on a simulated clock), so that what the simulation reports is what the daemon does. Time comes in as an
/// argument (`Moment`): nothing here reads a clock or sleeps.
///
/// Braze limits requests per workspace (3,000 per 3 s, in fixed windows), shared by every host, and says on
/// every answer how much of the current window is left (`X-RateLimit-Remaining`) and when it resets
/// (`X-RateLimit-Reset`). Reaching the limit is the normal state of a fleet, so the policy spends the window
/// instead of bursting into it:
/// - **Pacing.** Alone on the window, a host uses what is left as fast as its send window allows. When S hosts
///   spend it (S is measured, not configured: how fast `remaining` falls against this host's own answers; other
///   integrations on the workspace count too), what is left once every sharer's requests in flight are counted
///   (`remaining − S × in flight`) is spread over the time left as this host's `1/√S` part of it: the next
///   request starts no sooner than `time left × √S / left` after the previous one. Every host paces on the same
///   reading, so the fleet spends the window without bursting into 429s, and the square root (rather than S)
///   makes shares converge to equal: equal backlogs finish together. A new host starts with one request in
///   flight and adds one per answer (slow start), so a fleet that starts together learns S before it has every
///   window out.
/// - **A new window.** Once the reset has passed, the last reading says nothing: one request (a probe) goes
///   out, a little after the reset (jitter, so a fleet does not arrive in step), and its answer paces the rest.
///   Unless the window that passed had a quarter or more of its limit to spare: then nobody pressed on it, the
///   next one is taken to start full, and pacing goes on without a probe until an answer replaces the guess.
/// - **429.** Back-pressure, not failure: the sink sends the same request again once this allows it. The pause
///   is `Retry-After`, else the reset (when in the future; cut to `resetHorizon`, 15 minutes), plus jitter. The 429s that
///   come back together from one overshoot (every request that was in flight) are one round: only a 429 for a
///   request started after the last round began starts another. Each round in a row raises a floor under the
///   pause (100 ms, doubling to a minute), so `Retry-After: 0`, or a reset already past because our clock runs
///   ahead of Braze's, cannot make a hot loop.
/// - **The send window** (requests in flight) halves once per round and grows back by one per answer.
/// - **`--max-requests-per-second R`** (this host's share, set by hand): no request starts while R others are
///   in flight or were answered within the last second (counted from the answer, so it holds at Braze too).
package struct BrazeRatePolicy: Sendable {
    /// What to do now.
    package enum Decision: Sendable, Hashable {
        /// Send; hand the ticket back to `release` with the answer.
        case start(Ticket)
        /// Nothing may start before this monotonic time.
        case wait(until: Duration)
        /// Nothing may start until an answer comes in (the send window is full, or the last requests of the
        /// window are in flight).
        case waitForAnswer
    }

    /// Which 429 round was current when a request started.
    package struct Ticket: Sendable, Hashable {
        var round: Int
    }

    /// What one answer says about the rate.
    package enum Feedback: Sendable, Hashable {
        /// Not rate limited.
        case answered(BrazeRateHeaders)
        /// A 429; `hintMilliseconds` from `Retry-After`, else the reset, relative to now (may be 0 or negative).
        case rateLimited(BrazeRateHeaders, hintMilliseconds: Int64?)
        /// No answer (a timeout, a connection error): says nothing about the rate.
        case noAnswer
    }

    /// The window of the last reading: how much was left, and when it resets.
    struct Reading: Sendable, Hashable {
        var remaining: Int
        var resetAtMilliseconds: Int64
        /// How long after the reset the first request of the next window may go (drawn once per window).
        var jitterMilliseconds: Int64
        /// `remaining` at the window's first reading, and this host's answers in the window since: how fast
        /// the window empties against how much of that is ours tells how many hosts share it.
        var firstRemaining: Int = 0
        var ownAnswers = 0
        /// Not read but foreseen: the window after one that had room to spare (see `blockedUntil`). Any answer
        /// replaces it.
        var predicted = false
    }

    /// Counters and the last reading, for `/metrics` and `status`.
    struct Snapshot: Sendable, Hashable {
        var inFlight = 0
        var window = 0
        /// Requests that had to wait before starting (pacing, a reset, a 429's pause, the per-second cap).
        var waits = 0
        var waitedMilliseconds: Int64 = 0
        /// 429 answers received, and the rounds they made.
        var rateLimitedAnswers = 0
        var rateLimitRounds = 0
        /// The last `X-RateLimit-Limit`, and the last reading of the current window.
        var limit: Int?
        var remaining: Int?
        var resetAtMilliseconds: Int64?
        /// Until when (UTC milliseconds) nothing may start, when that is known now; `nil` when a request may start.
        var waitingUntilMilliseconds: Int64?
    }

    let maxWindow: Int
    let maxRequestsPerSecond: Int?

    /// The longest wait a header can impose at once: a reset or `Retry-After` further away is cut to this and
    /// Braze is asked again (a bogus header must not stop delivery for a day; an hourly limit still holds).
    static let resetHorizon: Int64 = 900_000
    /// The pause floor of the first 429 round, doubled for each round in a row, up to `pauseCap`.
    static let pauseFloor: Int64 = 100
    static let pauseCap: Int64 = 60_000
    /// Braze's documented window, until two readings show another.
    static let defaultWindowMilliseconds: Int64 = 3_000
    /// Jitter: up to this share of the window (3 %), that bound kept between 20 and 250 ms.
    static let jitterShare = 0.03

    private(set) var window: Int
    private(set) var inFlight = 0
    /// How many hosts (or other integrations) spend the window with us, as measured: the window's fall since
    /// its first reading over this host's own answers since. Kept from one window to the next.
    private(set) var sharers: Double = 1
    private var recentAnswers: [Duration] = []
    private var lastStart: Duration?
    private var reading: Reading?
    private var limit: Int?
    /// Whether answers carry the rate headers: assumed at first (Braze sends them on every answer); an answer
    /// without them turns pacing off (a destination that sends none must not be held to one request at a time),
    /// and one with them turns it on again.
    private var headersSeen = true
    private var windowMilliseconds: Int64?
    private var pausedUntil: Duration?
    private var round = 0
    /// 429 rounds in a row (reset by an answer to a request started in the current round).
    private(set) var streak = 0
    private var random: SplitMix64
    private var counters = Snapshot()

    package init(maxWindow: Int, maxRequestsPerSecond: Int?, seed: UInt64) {
        self.maxWindow = max(1, maxWindow)
        self.maxRequestsPerSecond = maxRequestsPerSecond.map { max(1, $0) }
        // Slow start: one request in flight, one more per answer (doubling each round trip), so a fleet that
        // starts together learns how many share the window before each host has its whole window out.
        window = 1
        random = SplitMix64(seed: seed)
    }

    /// Whether a request may start now; when it may, it is counted in flight.
    package mutating func decide(at now: Moment) -> Decision {
        let blocked = blockedUntil(at: now)
        guard case .none = blocked else { return blocked.decision }
        inFlight += 1
        lastStart = now.monotonic
        return .start(Ticket(round: round))
    }

    /// A request started with `ticket` was answered (or failed): counts it out of flight and learns from it.
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
                // `Retry-After` is the one instruction that wins over the reset: after it, one probe asks again.
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
            counters.rateLimitedAnswers += 1
            // The other 429s of an overshoot that a round already answered change nothing.
            guard ticket.round == round else { return }
            round += 1
            streak += 1
            counters.rateLimitRounds += 1
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

    /// Counts a wait that ended (for `/metrics`).
    mutating func recordWait(milliseconds: Int64) {
        counters.waits += 1
        counters.waitedMilliseconds += max(0, milliseconds)
    }

    func snapshot(at now: Moment) -> Snapshot {
        var snapshot = counters
        snapshot.inFlight = inFlight
        snapshot.window = window
        snapshot.limit = limit
        snapshot.remaining = reading?.remaining
        snapshot.resetAtMilliseconds = reading?.resetAtMilliseconds
        var copy = self
        if case .wait(let until) = copy.blockedUntil(at: now).decision {
            snapshot.waitingUntilMilliseconds = now.wallMilliseconds + Self.milliseconds(until - now.monotonic)
        }
        return snapshot
    }

    // MARK: Deciding

    private enum Blocked {
        case none
        case until(Duration)
        case answer

        var decision: Decision {
            switch self {
            case .none, .answer: return .waitForAnswer
            case .until(let until): return .wait(until: until)
            }
        }
    }

    private mutating func blockedUntil(at now: Moment) -> Blocked {
        if let pausedUntil, pausedUntil > now.monotonic { return .until(pausedUntil) }
        pausedUntil = nil
        if let limit = maxRequestsPerSecond {
            let cutoff = now.monotonic - .seconds(1)
            recentAnswers.removeAll { $0 <= cutoff }
            if inFlight + recentAnswers.count >= limit {
                // The oldest answer leaves the window first; with none, an answer must come in first.
                return recentAnswers.first.map { .until($0 + .seconds(1)) } ?? .answer
            }
        }
        if inFlight >= window { return .answer }
        guard headersSeen else { return .none }
        // Nothing read yet (a new daemon): one request first, so that a fleet starting together does not
        // send every host's whole send window into the same window.
        guard let reading else { return inFlight > 0 ? .answer : .none }
        let untilReset = reading.resetAtMilliseconds - now.wallMilliseconds
        if untilReset > 0, untilReset <= Self.resetHorizon {
            let afterReset = now.monotonic + .milliseconds(untilReset + reading.jitterMilliseconds)
            // What is left once every sharer's requests in flight are counted (each has about as many out as
            // this host), so that together they never have more out than the window holds; then this host's part
            // of it, `left / S^0.5`: S measured as the window's fall over this host's own answers is neutral to
            // how the window was shared so far (a host with twice the others' rate measures half their S and
            // would keep its lead), and the power below 1 makes a larger share weigh less, so shares converge
            // to equal. The fleet then spends a window √S times faster than evenly, which the count in
            // flight keeps within what is left.
            let left = Double(reading.remaining) - sharers * Double(inFlight)
            let share = left / Self.fairnessWeight(sharers)
            if share <= 0 {
                // The window's last requests are out: their answers may show room; else wait for the reset.
                if reading.remaining > 0, inFlight > 0 { return .answer }
                return .until(afterReset)
            }
            // Alone on the window (nobody else's requests make it fall), what is left is this host's to use at
            // once: spreading it would only make the last requests of a backlog wait for nothing. "Alone" is
            // measured in this window over `aloneAfterAnswers` answers and strict (the window fell by at most 2 %
            // more than this host spent): a looser test let a host that got ahead burst, starve the others, and
            // so keep measuring itself alone (two equal hosts finished 2× apart).
            if reading.ownAnswers >= Self.aloneAfterAnswers, sharers <= Self.aloneAtMost { return .none }
            if let lastStart {
                let next = lastStart + .milliseconds(untilReset) * (1 / share)
                if next > now.monotonic { return .until(min(next, afterReset)) }
            }
            return .none
        }
        // The window that passed had a quarter or more of its limit to spare: nobody pressed on it, and the next
        // one starts full. Pace on that foresight (an answer soon replaces it) rather than stop for a probe,
        // which would cost a round trip every window.
        if untilReset <= 0, !reading.predicted, let limit, reading.remaining * 4 >= limit {
            let window = windowMilliseconds ?? Self.defaultWindowMilliseconds
            let reset = reading.resetAtMilliseconds + (-untilReset / window + 1) * window
            self.reading = Reading(
                remaining: limit, resetAtMilliseconds: reset, jitterMilliseconds: reading.jitterMilliseconds,
                firstRemaining: limit, predicted: true)
            return blockedUntil(at: now)
        }
        // The reading is of a window that has passed (or its reset is implausible): one request at a time
        // until an answer tells how much of the new window is left, the first one a little after the reset.
        if inFlight > 0 { return .answer }
        if untilReset <= 0, -untilReset < reading.jitterMilliseconds {
            return .until(now.monotonic + .milliseconds(reading.jitterMilliseconds + untilReset))
        }
        return .none
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
                // Answers come back out of order: the lowest count of a window is the latest.
                current.remaining = min(current.remaining, remaining)
                current.ownAnswers += 1
                if current.ownAnswers >= Self.answersToMeasureSharers {
                    let fall = Double(max(0, current.firstRemaining - current.remaining))
                    sharers = min(Self.maxSharers, max(1, fall / Double(current.ownAnswers)))
                }
                reading = current
                return
            }
            // A late answer from a window that has passed says nothing about this one.
            if reset < current.resetAtMilliseconds { return }
            let step = reset - current.resetAtMilliseconds
            if step <= Self.resetHorizon { windowMilliseconds = min(windowMilliseconds ?? step, step) }
        }
        reading = Reading(
            remaining: remaining, resetAtMilliseconds: reset, jitterMilliseconds: jitter(), firstRemaining: remaining)
    }

    /// How many of S sharers' shares this host paces as: S^0.5 (see the pacing in `blockedUntil`).
    static func fairnessWeight(_ sharers: Double) -> Double {
        sharers <= 1 ? 1 : exp(0.5 * log(sharers))
    }

    /// Measured sharers of at most this, over at least `aloneAfterAnswers` own answers in the window, mean this
    /// host is alone on it.
    static let aloneAtMost = 1.02
    static let aloneAfterAnswers = 20

    /// Own answers in a window before its fall is trusted to count the sharers (the previous window's count holds
    /// until then), and the most sharers believed.
    static let answersToMeasureSharers = 3
    static let maxSharers: Double = 10_000

    /// A random delay of up to 3 % of the window (20 to 250 ms), so hosts do not come back in step.
    private mutating func jitter() -> Int64 {
        let window = windowMilliseconds ?? Self.defaultWindowMilliseconds
        let most = min(250, max(20, Int64(Double(window) * Self.jitterShare)))
        return Int64(random.next() % UInt64(most + 1))
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }
}
