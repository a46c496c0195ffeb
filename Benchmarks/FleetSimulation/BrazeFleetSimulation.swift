import EventQueue
import EventQueueBraze
import EventQueueDelivery

/// A fleet of hosts sharing one Braze workspace's rate limit, simulated: what goodput, share of 429s and fairness
/// the daemon's own pacing (`BrazeRatePolicy`, the code `BrazeRateGovernor` runs) gives H hosts, for H beyond
/// what one machine can run as processes (tens to hundreds).
///
/// Deterministic and in-process: a simulated clock, no sockets, no sleeps. Each host has a backlog of full
/// requests and at most `maxInFlight` in flight; each request reaches Braze half a round trip after it starts
/// and is answered half a round trip later. Braze counts arrivals in fixed windows aligned to its clock and
/// answers 429 (with `Remaining: 0`) beyond the limit, with the three `X-RateLimit-*` headers on every answer.
/// A 429'd request is sent again, as the sink does. Hosts' clocks may be skewed from Braze's.
public struct BrazeFleetSimulation: Sendable {
    public struct Configuration: Sendable, Hashable {
        public var hosts: Int
        /// Full requests each host has to send.
        public var requestsPerHost: Int
        /// The workspace's limit: requests per window.
        public var limit: Int
        public var windowMilliseconds: Int64
        /// One request's round trip; each request draws its own within ±`latencySpread` of it.
        public var latencyMilliseconds: Double
        public var latencySpread: Double = 0.2
        public var maxInFlight: Int = 24
        public var maxRequestsPerSecond: Int?
        /// Host h's clock is ahead of Braze's by a fixed draw in ±`clockSkewMilliseconds`.
        public var clockSkewMilliseconds: Int64 = 0
        public var seed: UInt64 = 1

        public init(
            hosts: Int, requestsPerHost: Int, limit: Int = 3_000, windowMilliseconds: Int64 = 3_000,
            latencyMilliseconds: Double = 50
        ) {
            self.hosts = max(1, hosts)
            self.requestsPerHost = max(1, requestsPerHost)
            self.limit = max(1, limit)
            self.windowMilliseconds = max(1, windowMilliseconds)
            self.latencyMilliseconds = max(0.001, latencyMilliseconds)
        }

        /// The time the limit alone allows for every host's backlog: full windows, nothing refused.
        public var idealSeconds: Double {
            Double(hosts * requestsPerHost) / Double(limit) * Double(windowMilliseconds) / 1000
        }
    }

    public struct Outcome: Sendable, Hashable {
        /// When each host had its whole backlog accepted, in seconds from the start.
        public var finishedSeconds: [Double]
        /// Requests sent in all, and those answered 429.
        public var requests: Int
        public var rateLimited: Int
        public var idealSeconds: Double
        /// The same bound with the windows where they fell: the start of the last window the backlog needs (the
        /// first one began before the fleet did), plus one round trip. Tighter than `idealSeconds`, which a run
        /// can beat by up to one window.
        public var windowBoundSeconds: Double

        public var elapsedSeconds: Double { finishedSeconds.max() ?? 0 }
        /// The share of the limit used: the ideal time over the time taken.
        public var goodput: Double { elapsedSeconds > 0 ? idealSeconds / elapsedSeconds : 0 }
        /// `windowBoundSeconds` over the time taken.
        public var goodputAgainstWindowBound: Double { elapsedSeconds > 0 ? windowBoundSeconds / elapsedSeconds : 0 }
        public var rateLimitedShare: Double { requests > 0 ? Double(rateLimited) / Double(requests) : 0 }
        /// The slowest host's time over the fastest's.
        public var fairness: Double {
            guard let fastest = finishedSeconds.min(), fastest > 0 else { return 1 }
            return (finishedSeconds.max() ?? fastest) / fastest
        }
    }

    public let configuration: Configuration

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// Runs the fleet until every backlog is accepted (or a simulated hour has passed).
    public func run() -> Outcome {
        var world = World(configuration)
        world.run()
        let windows = Int64(
            (configuration.hosts * configuration.requestsPerHost + configuration.limit - 1) / configuration.limit)
        let window = configuration.windowMilliseconds
        let lastWindowStart = (world.brazeEpochMilliseconds / window + windows - 1) * window
        let bound =
            Double(lastWindowStart - world.brazeEpochMilliseconds) / 1000 + configuration.latencyMilliseconds / 1000
        return Outcome(
            finishedSeconds: world.hosts.map { Double($0.finishedAt ?? world.now) / 1_000_000 },
            requests: world.requests, rateLimited: world.rateLimited, idealSeconds: configuration.idealSeconds,
            windowBoundSeconds: bound)
    }
}

/// The simulation's state: hosts, Braze's counter, and the events to come, in microseconds.
private struct World {
    struct Host {
        var policy: BrazeRatePolicy
        var skewMilliseconds: Int64
        var left: Int
        var accepted = 0
        var finishedAt: Int64?
        /// The earliest wake-up already scheduled (no need to schedule a later one).
        var wakeAt: Int64?
    }

    enum Kind {
        case wake(host: Int)
        case arrive(host: Int, request: Int)
        case answer(host: Int, request: Int)
    }

    struct Event {
        var time: Int64
        var sequence: Int
        var kind: Kind
    }

    struct Request {
        var ticket: BrazeRatePolicy.Ticket
        var status = 0
        var headers = BrazeRateHeaders()
    }

    let configuration: BrazeFleetSimulation.Configuration
    var hosts: [Host] = []
    var requestsInFlight: [Int: Request] = [:]
    var events = EventHeap()
    var now: Int64 = 0
    var sequence = 0
    var random: SplitMix64
    /// Braze's clock at the simulation's start (UTC milliseconds): somewhere inside a window.
    let brazeEpochMilliseconds: Int64
    var brazeWindow: Int64 = -1
    var countInWindow = 0
    var requests = 0
    var rateLimited = 0

    static let horizon: Int64 = 3_600 * 1_000_000

    init(_ configuration: BrazeFleetSimulation.Configuration) {
        self.configuration = configuration
        random = SplitMix64(seed: configuration.seed)
        brazeEpochMilliseconds = 1_800_000_000_000 + Int64(random.next() % UInt64(configuration.windowMilliseconds))
        for index in 0..<configuration.hosts {
            let spread = configuration.clockSkewMilliseconds
            let skew = spread > 0 ? Int64(random.next() % UInt64(2 * spread + 1)) - spread : 0
            hosts.append(
                Host(
                    policy: BrazeRatePolicy(
                        maxWindow: configuration.maxInFlight, maxRequestsPerSecond: configuration.maxRequestsPerSecond,
                        seed: configuration.seed &+ UInt64(index) &* 7919),
                    skewMilliseconds: skew, left: configuration.requestsPerHost))
            schedule(.wake(host: index), at: 0)
        }
    }

    mutating func run() {
        while let event = events.pop() {
            now = event.time
            if now > Self.horizon { break }
            switch event.kind {
            case .wake(let host):
                if hosts[host].wakeAt == now { hosts[host].wakeAt = nil }
                startRequests(host)
            case .arrive(let host, let request):
                arrive(host: host, request: request)
            case .answer(let host, let request):
                answer(host: host, request: request)
                startRequests(host)
            }
        }
    }

    private func moment(_ host: Int) -> Moment {
        Moment(
            monotonic: .microseconds(now),
            wallMilliseconds: brazeEpochMilliseconds + now / 1000 + hosts[host].skewMilliseconds)
    }

    private mutating func startRequests(_ host: Int) {
        while hosts[host].left > 0 {
            switch hosts[host].policy.decide(at: moment(host)) {
            case .start(let ticket):
                hosts[host].left -= 1
                requests += 1
                let request = requests
                requestsInFlight[request] = Request(ticket: ticket)
                let latency = Int64(configuration.latencyMilliseconds * 1000 * spread())
                schedule(.arrive(host: host, request: request), at: now + latency / 2)
                schedule(.answer(host: host, request: request), at: now + latency)
            case .wait(let until):
                let (seconds, attoseconds) = until.components
                let at = max(now + 1, seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
                if hosts[host].wakeAt.map({ at < $0 || $0 <= now }) ?? true {
                    hosts[host].wakeAt = at
                    schedule(.wake(host: host), at: at)
                }
                return
            case .waitForAnswer:
                return  // the next answer wakes it
            }
        }
    }

    private mutating func arrive(host: Int, request: Int) {
        let clock = brazeEpochMilliseconds + now / 1000
        let window = clock / configuration.windowMilliseconds
        if window != brazeWindow {
            brazeWindow = window
            countInWindow = 0
        }
        countInWindow += 1
        let limit = configuration.limit
        var headers = BrazeRateHeaders()
        headers.limit = limit
        headers.remaining = max(0, limit - countInWindow)
        // Reset in whole epoch seconds, as Braze sends it.
        let reset = (window + 1) * configuration.windowMilliseconds
        headers.resetAtMilliseconds = (reset + 999) / 1000 * 1000
        requestsInFlight[request]?.headers = headers
        requestsInFlight[request]?.status = countInWindow > limit ? 429 : 201
    }

    private mutating func answer(host: Int, request: Int) {
        guard let sent = requestsInFlight.removeValue(forKey: request) else { return }
        let now = moment(host)
        if sent.status == 429 {
            rateLimited += 1
            hosts[host].left += 1
            hosts[host].policy.release(
                sent.ticket,
                .rateLimited(
                    sent.headers, hintMilliseconds: sent.headers.retryHint(nowMilliseconds: now.wallMilliseconds)),
                at: now)
        } else {
            hosts[host].policy.release(sent.ticket, .answered(sent.headers), at: now)
            hosts[host].accepted += 1
            if hosts[host].accepted == configuration.requestsPerHost { hosts[host].finishedAt = self.now }
        }
    }

    private mutating func spread() -> Double {
        let unit = Double(random.next() >> 11) / Double(1 << 53)
        return 1 + configuration.latencySpread * (2 * unit - 1)
    }

    private mutating func schedule(_ kind: Kind, at time: Int64) {
        sequence += 1
        events.push(Event(time: time, sequence: sequence, kind: kind))
    }
}

/// A binary min-heap of events by time, then by the order they were scheduled (so runs replay exactly).
private struct EventHeap {
    private var items: [World.Event] = []

    mutating func push(_ event: World.Event) {
        items.append(event)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(items[child], items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> World.Event? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let first = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, Self.before(items[left], items[smallest]) { smallest = left }
            if right < items.count, Self.before(items[right], items[smallest]) { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }

    private static func before(_ a: World.Event, _ b: World.Event) -> Bool {
        a.time != b.time ? a.time < b.time : a.sequence < b.sequence
    }
}
