import AsyncHTTPClient
import EventQueue
import EventQueueDelivery
import Logging
import NIOCore
import Synchronization

/// Delivers records to Braze's `POST /users/track`, and erasures to `POST /users/delete` (`erase`).
///
/// A batch becomes as few requests as Braze's limits and per-user ordering allow (see `BrazeBatcher`), sent one
/// after another. Several batches are delivered at once (the drain loop's `maxInFlight`; they never share a
/// user), all paced by one `BrazeRateGovernor`. Each answer is mapped to per-record outcomes: Braze's partial
/// success (`errors`) rejects only the objects it names; a 400 is bisected down to the offending records so one
/// bad record never blocks or dead-letters its neighbours; 401/403/404 and redirects (never followed) halt the
/// pass (nothing is counted against the records); 408, 5xx and network failures are the destination's failures,
/// retried without costing the records an attempt (a few in a row make the sink unavailable: the drain loop's
/// `SinkAvailability` then probes it); a 429 is back-pressure: the same request goes again once the shared rate
/// window allows (`BrazeRatePolicy`). The whole table is `BrazeBatchDelivery`'s. The API key never
/// appears in logs, errors or descriptions.
public final class BrazeSink: Sink, BrazeRequestSender, CustomStringConvertible, CustomReflectable {
    public let name: String
    private let endpoint: String
    /// Why the base URL is unusable, if it is: every batch then halts with a configuration error.
    private let baseURLError: BrazeConfigurationError?
    private let apiKey: BrazeAPIKey
    private let batcher: BrazeBatcher
    private let transport: BrazeTransport
    private let governor: BrazeRateGovernor
    private let observer: (any BrazeRequestObserver)?
    private let logger: Logger
    /// `POST /users/delete`, paced in its own rate bucket (`erase`).
    private let deleter: BrazeDeleteSender
    /// See `Sink.maxConcurrentDeliveries`: the drain loop's `--max-in-flight` is the cap.
    public let maxConcurrentDeliveries: Int
    /// When `/users/track` last answered (`answered(within:)`).
    private let lastAnswer = Mutex<ContinuousClock.Instant?>(nil)

    /// - Parameters:
    ///   - baseURL: the REST endpoint of the account's instance, e.g. `https://rest.iad-01.braze.com` (never
    ///     hard-coded: it differs per instance).
    ///   - maxObjectsPerRequest: the combined limit of some plans (50); `nil` for only the 75-per-array limit.
    ///   - connectTimeout: the deadline for opening a connection; a timeout is retried.
    ///   - requestTimeout: the deadline for one request, answer body included; a timeout is retried.
    ///   - maxInFlight: requests in flight at most (the send window's ceiling; a 429 halves the window).
    ///   - maxRequestsPerSecond: this host's share of the workspace's rate limit; `nil` for no cap of our own.
    ///
    /// An unusable `baseURL` does not throw here (check it first with `validate(baseURL:)`); every batch then
    /// halts with a configuration error, so records are kept untouched.
    public init(
        baseURL: String, apiKey: BrazeAPIKey, maxObjectsPerRequest: Int? = nil,
        connectTimeout: Duration = .seconds(5), requestTimeout: Duration = .seconds(30),
        maxInFlight: Int = DrainOptions.defaultMaxInFlight, maxRequestsPerSecond: Int? = nil,
        observer: (any BrazeRequestObserver)? = nil,
        logger: Logger
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        do {
            try Self.validate(baseURL: base)
            baseURLError = nil
        } catch {
            baseURLError = error
        }
        name = "braze:" + BrazeBaseURL.displayed(base)
        endpoint = base + "/users/track"
        self.apiKey = apiKey
        batcher = BrazeBatcher(maxObjectsPerRequest: maxObjectsPerRequest)
        maxConcurrentDeliveries = max(1, maxInFlight)
        transport = BrazeTransport(
            connectTimeout: connectTimeout, requestTimeout: requestTimeout, maxConnections: maxConcurrentDeliveries)
        governor = BrazeRateGovernor(
            maxWindow: maxConcurrentDeliveries, maxRequestsPerSecond: maxRequestsPerSecond, logger: logger)
        self.observer = observer
        self.logger = logger
        deleter = BrazeDeleteSender(
            baseURL: base, sinkName: name, apiKey: apiKey, transport: transport, logger: logger)
    }

    /// One full request: 75 objects (an array's limit), or the combined limit when set.
    public var recordsPerRequest: Int? { batcher.maxObjectsPerRequest ?? batcher.maxObjectsPerArray }

    /// The send window, requests in flight, the last rate-limit reading and the waits, for `/metrics` and
    /// `GET /status`.
    public func rateStatus() async -> BrazeRateStatus {
        BrazeRateStatus(await governor.snapshot)
    }

    /// Checks that `baseURL` is an absolute `http(s)://` URL, so a typo is reported at startup rather than at
    /// the first delivery.
    public static func validate(baseURL: String) throws(BrazeConfigurationError) {
        try BrazeBaseURL.check(baseURL)
    }

    public var description: String { "BrazeSink(\(name))" }
    public var customMirror: Mirror { Mirror(self, children: ["name": name], displayStyle: .class) }

    /// `Sink.close()`: the same as `shutdown()`.
    public func close() async {
        await shutdown()
    }

    /// Closes the HTTP client's connections; call once, after the last `deliver` (a debug build traps when an
    /// HTTP client is released without it).
    public func shutdown() async {
        await transport.shutdown()
    }

    public func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        if let baseURLError {
            return DeliveryReport(halt: SinkHalt(kind: .configuration, reason: "\(baseURLError)"))
        }
        let encoded = BrazeEncodedObjects(batch)
        let requests = batcher.split(batch, size: encoded)
        var delivery = BrazeBatchDelivery(encoded: encoded, sender: self)
        await delivery.run(requests)
        logger.debug(
            "braze batch done",
            metadata: [
                "records": "\(batch.count)", "requests": "\(delivery.requestsSent)",
                "planned_requests": "\(requests.count)",
            ])
        return DeliveryReport(outcomes: delivery.outcomes, halt: delivery.halt)
    }

    /// Deletes the users of `erasures` with `POST /users/delete`: one identifier type per request, at most 50 each,
    /// paced in the deletions' own rate bucket (`BrazeDeleteSender`, `BrazeDeleteDelivery`).
    public func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
        if let baseURLError {
            return DeliveryReport(halt: SinkHalt(kind: .configuration, reason: "\(baseURLError)"))
        }
        var delivery = BrazeDeleteDelivery(sender: deleter)
        await delivery.run(erasures)
        return DeliveryReport(outcomes: delivery.outcomes, halt: delivery.halt)
    }

    /// Sends one request once the governor lets it start, and again after every 429 (back-pressure, not
    /// failure: the records keep their lease, which `LeasedDelivery` renews, and no attempt is spent); `nil` when
    /// the delivery was cancelled before an answer came.
    func send(_ body: BrazeRequestBody) async -> BrazeAnswer? {
        await governor.sendUntilNotRateLimited { ticket in await self.send(body, ticket: ticket) }
    }

    /// One try of one request; tells the governor what the answer said about the rate.
    private func send(_ body: BrazeRequestBody, ticket: BrazeRatePolicy.Ticket) async -> BrazeAnswer {
        let started = ContinuousClock.now
        let objects = body.idsByArray.values.reduce(0) { $0 + $1.count }
        var answer: BrazeAnswer
        var feedback = BrazeRatePolicy.Feedback.noAnswer
        var status: Int?
        do {
            let response = try await transport.send(
                method: "POST", url: endpoint,
                headers: [("Authorization", "Bearer " + apiKey.secret), ("Content-Type", "application/json")],
                body: body.bytes, logger: logger)
            answer = BrazeAnswer.interpret(
                status: response.status, headers: response.headers, body: response.body,
                nowMilliseconds: WallClock.nowMilliseconds())
            status = response.status
            let rate = BrazeRateHeaders(response.headers)
            if case .rateLimited(let hint) = answer {
                feedback = .rateLimited(rate, hintMilliseconds: hint)
            } else {
                feedback = .answered(rate)
            }
            logger.debug(
                "braze request answered",
                metadata: [
                    "status": "\(response.status)", "objects": "\(objects)",
                    "latency_ms": "\(Self.milliseconds(since: started))",
                ])
        } catch {
            answer =
                BrazeAnswer.untrustedCertificate(error, endpoint: name)
                ?? .transient(reason: "request to \(name) failed: \(Self.describe(error))")
        }
        await governor.release(ticket, feedback)
        if case .transient = answer {} else { lastAnswer.withLock { $0 = ContinuousClock.now } }
        observer?.requestFinished(status: status, latency: ContinuousClock.now - started)
        switch answer {
        case .accepted(let errors) where !errors.isEmpty:
            logger.warning("braze refused some objects", metadata: ["refused": "\(errors.count)"])
        case .accepted: break
        case .badRequest(let status, let message):
            logger.warning(
                "braze refused a request; bisecting",
                metadata: ["status": "\(status)", "message": "\(message)", "objects": "\(objects)"])
        case .misconfigured(let status, let message):
            logger.warning(
                "braze refused the key or URL", metadata: ["status": "\(status)", "message": "\(message)"])
        case .rateLimited(let after):
            // A round is logged once by the governor; each 429 only at debug level.
            logger.debug("braze rate limit", metadata: ["retry_after_ms": "\(after.map { "\($0)" } ?? "none")"])
        case .untrustedCertificate(let reason):
            logger.error("braze's certificate could not be verified", metadata: ["reason": "\(reason)"])
        case .transient(let reason):
            // At debug level: one line per failed request would repeat every probe of an outage; the drain loop's
            // `SinkAvailabilityMonitor` logs the outage once, with this reason, when it starts and when it ends.
            logger.debug(
                "braze request failed",
                metadata: ["reason": "\(reason)", "latency_ms": "\(Self.milliseconds(since: started))"])
        }
        return answer
    }

    func answered(within span: Duration) -> Bool {
        lastAnswer.withLock { $0.map { ContinuousClock.now - $0 <= span } ?? false }
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// A short description of a transport error (AsyncHTTPClient's errors never include request headers).
    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout { return "timed out" }
        }
        return ExternalText.transportError(error)
    }
}
