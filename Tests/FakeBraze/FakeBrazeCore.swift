import EventQueueRecords
import Foundation
import Synchronization

/// The fake's state and decisions, free of networking so the handler stays a thin adapter.
final class FakeBrazeCore: Sendable {
    let apiKey: String

    struct State {
        var faults: FakeBrazeFaults
        var generator: SplitMix64
        var rateLimitedLeft: Int
        var stats = FakeBrazeStats()
        /// The 2xx requests, in arrival order: their bodies and what became of each object (the objects' JSON
        /// text is made only when asked for, by `received()`).
        var received: [ReceivedRequest] = []
        var inFlight = FakeBrazeInFlight()
        /// The rate-limit window (epoch seconds / window length) and the requests counted in it, as Braze counts
        /// them.
        var rateWindow = 0
        var requestsInRateWindow = 0
        /// Both endpoints' requests, arriving and answered, in order (`FakeBrazeTimeline`).
        var timeline = FakeBrazeTimeline()
        /// `/users/delete`: its answered deletions, its request count, its own rate window and its failures to come.
        var deletions: [ReceivedDeletion] = []
        /// `/users/identify`, `/users/alias/new` and `/users/merge`: the calls answered 2xx.
        var identityCalls: [ReceivedIdentityCall] = []
        var deleteRequests = 0
        var deleteRateWindow = 0
        var deletesInRateWindow = 0
        var deleteFailuresLeft: [Int] = []
    }

    let started = ContinuousClock.now

    let state: Mutex<State>

    /// The documented rate limit (3,000 requests per 3 seconds), for the `X-RateLimit-*` headers when no
    /// `workspaceLimit` is set.
    static let rateLimit = 3000

    init(apiKey: String, faults: FakeBrazeFaults) {
        self.apiKey = apiKey
        state = Mutex(
            State(
                faults: faults, generator: SplitMix64(seed: faults.seed),
                rateLimitedLeft: faults.rateLimitNextRequests, deleteFailuresLeft: faults.deleteFailures))
    }

    func setFaults(_ faults: FakeBrazeFaults) {
        state.withLock {
            $0.faults = faults
            $0.generator = SplitMix64(seed: faults.seed)
            $0.rateLimitedLeft = faults.rateLimitNextRequests
            $0.deleteFailuresLeft = faults.deleteFailures
        }
    }

    func reset() {
        state.withLock {
            $0.stats = FakeBrazeStats()
            $0.received = []
            $0.inFlight.resetCounters()
            $0.timeline = FakeBrazeTimeline()
            $0.deletions = []
            $0.identityCalls = []
        }
    }

    /// A request answered 2xx, as kept until `received()` is asked.
    struct ReceivedRequest: Sendable {
        var number: Int
        var body: Data
        var objects: [(array: String, index: Int, accepted: Bool)]
    }

    func received() -> [ReceivedObject] {
        let requests = state.withLock { $0.received }
        return requests.flatMap { request in
            let root = FakeBrazeContract.parse(request.body) as? [String: Any] ?? [:]
            return request.objects.map { object in
                let elements = root[object.array] as? [Any] ?? []
                let json =
                    elements.indices.contains(object.index)
                    ? FakeBrazeContract.canonical(elements[object.index]) : "null"
                return ReceivedObject(
                    array: object.array, json: json, request: request.number, index: object.index,
                    accepted: object.accepted)
            }
        }
    }
    func stats() -> FakeBrazeStats {
        state.withLock { state in
            var stats = state.stats
            stats.userOverlaps = state.inFlight.userOverlaps
            stats.maxInFlight = state.inFlight.maxInFlight
            stats.maxRequestsInOneSecond = state.inFlight.maxRequestsInOneSecond
            return stats
        }
    }

    /// The handler answered (or dropped: no `status`) request `number` of `endpoint`: it is no longer in flight.
    func finished(request number: Int, endpoint: String, status: Int?) {
        state.withLock { state in
            state.inFlight.finished(request: endpoint == "/users/track" ? number : -number)
            state.timeline.record(endpoint: endpoint, request: number, phase: .answered, users: [], status: status)
        }
    }

    /// The timeline of both endpoints (`FakeBrazeEvent`).
    func timeline() -> [FakeBrazeEvent] { state.withLock { $0.timeline.events } }

    /// A body over Braze's 4 MB limit: 413, nothing applied, counted under its status.
    func payloadTooLarge() -> FakeBrazeAction {
        state.withLock { $0.stats.byStatus[413, default: 0] += 1 }
        return Self.message(413, "Payload Too Large", [])
    }

    // MARK: /users/track

    /// Decides the answer to `POST /users/track`.
    func track(authorization: String?, contentType: String?, body: Data) -> FakeBrazeAction {
        let parsed = FakeBrazeContract.parse(body)
        let users = FakeBrazeInFlight.users(in: parsed)
        let (seconds, attoseconds) = (ContinuousClock.now - started).components
        let now = Double(seconds) + Double(attoseconds) / 1e18
        // Faults are drawn in a fixed order under the lock, so a seed gives the same sequence every run.
        let epochSeconds = Int(Date().timeIntervalSince1970)
        let (number, remaining, limit, resetAt, faults, drop, reset, rateLimited, serverError, hang) = state.withLock {
            state in
            state.stats.requests += 1
            let windowSeconds = max(1, state.faults.workspaceWindowSeconds)
            let limit = state.faults.workspaceLimit ?? Self.rateLimit
            if state.rateWindow != epochSeconds / windowSeconds {
                state.rateWindow = epochSeconds / windowSeconds
                state.requestsInRateWindow = 0
            }
            state.requestsInRateWindow += 1
            let overLimit = state.faults.workspaceLimit != nil && state.requestsInRateWindow > limit
            state.inFlight.started(request: state.stats.requests, users: users, at: now)
            state.timeline.record(
                endpoint: "/users/track", request: state.stats.requests, phase: .started, users: users, status: nil)
            let faults = state.faults
            let drop = state.generator.roll(faults.dropConnectionRate)
            let reset = state.generator.roll(faults.resetMidResponseRate)
            var rateLimited = state.generator.roll(faults.rateLimitRate)
            if state.rateLimitedLeft > 0 {
                state.rateLimitedLeft -= 1
                rateLimited = true
            }
            let serverError = state.generator.roll(faults.serverErrorRate)
            let hang = state.generator.roll(faults.hangRate)
            if hang { state.stats.hung += 1 }
            return (
                state.stats.requests, max(0, limit - state.requestsInRateWindow), limit,
                (epochSeconds / windowSeconds + 1) * windowSeconds, faults, drop, reset, rateLimited || overLimit,
                serverError, hang
            )
        }
        // A hung request never reached Braze: nothing recorded, and never in flight (the client gives up on it).
        if hang { return FakeBrazeAction(kind: .hang, status: 0, body: [], request: number) }
        var action = answer(
            number: number, remaining: remaining, limit: limit, resetAt: resetAt, faults: faults,
            authorization: authorization, contentType: contentType, body: body, parsed: parsed,
            rateLimited: rateLimited, serverError: serverError)
        action.delayMilliseconds = max(0, faults.delayMilliseconds)
        action.request = number
        if drop {
            action.kind = .drop
        } else if reset {
            action.kind = .resetMidResponse
        }
        state.withLock { state in
            switch action.kind {
            case .drop: state.stats.dropped += 1
            case .resetMidResponse:
                state.stats.resetMidResponse += 1
                state.stats.byStatus[action.status, default: 0] += 1
            case .respond: state.stats.byStatus[action.status, default: 0] += 1
            case .hang: break
            }
        }
        return action
    }

    private func answer(
        number: Int, remaining: Int, limit: Int, resetAt: Int, faults: FakeBrazeFaults, authorization: String?,
        contentType: String?, body: Data, parsed: Any?, rateLimited: Bool, serverError: Bool
    ) -> FakeBrazeAction {
        let nowSeconds = Int(Date().timeIntervalSince1970)
        // Per fixed 3-second window, as Braze counts: a count since the start would say "none remaining" for
        // good after 3,000 requests, and a client that honours it would crawl.
        var headers = [
            ("X-RateLimit-Limit", "\(limit)"),
            ("X-RateLimit-Remaining", "\(remaining)"),
            ("X-RateLimit-Reset", "\(resetAt)"),
        ]
        if let status = faults.hostileStatus {
            let echoed = faults.hostileMessage.replacing("{authorization}", with: authorization ?? "")
            return Self.message(status, echoed, headers)
        }
        if let location = faults.redirectLocation {
            return Self.message(301, "Moved Permanently", headers + [("Location", location)])
        }
        guard authorization == "Bearer " + apiKey else {
            return Self.message(401, "Invalid API Key", headers)
        }
        if let limit = faults.unauthorizedAfterRequests, number > limit {
            return Self.message(401, "Invalid API Key", headers)
        }
        if rateLimited {
            headers[1].1 = "0"
            if let reset = faults.rateLimitResetAfterSeconds { headers[2].1 = "\(nowSeconds + reset)" }
            if let retryAfter = faults.retryAfterSeconds { headers.append(("Retry-After", "\(retryAfter)")) }
            return Self.message(429, "Too Many Requests", headers)
        }
        if serverError { return Self.message(500, "Internal Server Error", headers) }
        guard let contentType, contentType.lowercased().hasPrefix("application/json") else {
            return Self.message(400, "Content-Type must be application/json", headers)
        }
        if let marker = faults.serverErrorMarker, !marker.isEmpty, body.range(of: Data(marker.utf8)) != nil {
            return Self.message(503, "fake-braze: server error marker in the request", headers)
        }
        if let poison = faults.poisonMarker, !poison.isEmpty, body.range(of: Data(poison.utf8)) != nil {
            return Self.message(400, "fake-braze: poison marker in the request", headers)
        }
        switch FakeBrazeContract.check(
            parsed: parsed, maxObjectsPerRequest: faults.maxObjectsPerRequest, rejectMarker: faults.rejectMarker)
        {
        case .malformed(let reason):
            return Self.message(400, reason, headers)
        case .checked(let objects):
            let kept = ReceivedRequest(
                number: number, body: body, objects: objects.map { ($0.array, $0.index, $0.error == nil) })
            state.withLock { state in
                state.received.append(kept)
                state.stats.objectsReceived += objects.count
            }
            return FakeBrazeAction(
                status: 201, headers: headers,
                body: Self.successBody(objects, paddingBytes: max(0, faults.successPaddingBytes)))
        }
    }

    static func successBody(_ objects: [FakeBrazeContract.CheckedObject], paddingBytes: Int = 0) -> [UInt8] {
        var response: [String: Any] = ["message": "success"]
        if paddingBytes > 0 { response["padding"] = String(repeating: "x", count: paddingBytes) }
        for array in FakeBrazeContract.arrays {
            let sent = objects.filter { $0.array == array }
            if !sent.isEmpty { response["\(array)_processed"] = sent.filter { $0.error == nil }.count }
        }
        let errors: [[String: Any]] = objects.compactMap { object in
            object.error.map { ["type": $0, "input_array": object.array, "index": object.index] }
        }
        if !errors.isEmpty { response["errors"] = errors }
        return json(response)
    }

    static func message(_ status: Int, _ text: String, _ headers: [(String, String)]) -> FakeBrazeAction {
        FakeBrazeAction(status: status, headers: headers, body: json(["message": text]))
    }

    static func json(_ object: Any) -> [UInt8] {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Array(data)
    }
}
