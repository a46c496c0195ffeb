import AsyncHTTPClient
import EventQueue
import EventQueueDelivery
import Logging
import Synchronization

/// One of Braze's rate buckets and the one way a request goes to it: paced by its own `BrazeRateGovernor`, the
/// answer classified (`BrazeAnswer.interpret`), the rate headers fed back, logged and measured alike. Two per
/// sink: `/users/track`, and the bucket the `/users/delete` and identity calls share; each judges its failures
/// (`answered(within:)`) by its own answers only.
final class BrazeEndpoint: Sendable {
    private let baseURL: String
    private let sinkName: String
    private let apiKey: BrazeAPIKey
    private let transport: BrazeTransport
    let governor: BrazeRateGovernor
    private let observer: (any BrazeRequestObserver)?
    private let logger: Logger
    /// When this bucket's endpoints last answered (`answered(within:)`).
    private let lastAnswer = Mutex<ContinuousClock.Instant?>(nil)

    /// Requests in flight at most in the users bucket: such calls are rare, and 4 stays far under its 333 a
    /// second even before the headers are read.
    static let usersWindow = 4

    init(
        baseURL: String, sinkName: String, apiKey: BrazeAPIKey, transport: BrazeTransport, maxWindow: Int,
        maxRequestsPerSecond: Int?, observer: (any BrazeRequestObserver)?, logger: Logger
    ) {
        self.baseURL = baseURL
        self.sinkName = sinkName
        self.apiKey = apiKey
        self.transport = transport
        governor = BrazeRateGovernor(maxWindow: maxWindow, maxRequestsPerSecond: maxRequestsPerSecond, logger: logger)
        self.observer = observer
        self.logger = logger
    }

    /// Sends `body` once the governor lets it start, and again after every 429 (the records keep their lease, and
    /// no attempt is spent); `nil` when the delivery was cancelled before an answer came.
    func send(_ body: BrazeRequestBody) async -> BrazeAnswer? {
        while let ticket = await governor.acquire() {
            let answer = await send(body, ticket: ticket)
            if case .rateLimited = answer { continue }
            return answer
        }
        return nil
    }

    /// Whether the endpoint answered a request (anything but a network failure, a timeout or a 5xx) within the
    /// last `span`: then it is up, and a request failing now may fail for what it carries.
    func answered(within span: Duration) -> Bool {
        lastAnswer.withLock { $0.map { ContinuousClock.now - $0 <= span } ?? false }
    }

    /// One try of one request; tells the governor what the answer said about the rate.
    private func send(_ body: BrazeRequestBody, ticket: BrazeRatePolicy.Ticket) async -> BrazeAnswer {
        let started = ContinuousClock.now
        var answer: BrazeAnswer
        var feedback = BrazeRatePolicy.Feedback.noAnswer
        var status: Int?
        do {
            let response = try await transport.send(
                method: "POST", url: baseURL + body.path,
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
        } catch {
            answer =
                BrazeAnswer.untrustedCertificate(error, endpoint: sinkName)
                ?? .transient(reason: "request to \(sinkName)\(body.path) failed: \(Self.describe(error))")
        }
        await governor.release(ticket, feedback)
        if case .transient = answer {} else { lastAnswer.withLock { $0 = ContinuousClock.now } }
        let latency = ContinuousClock.now - started
        observer?.requestFinished(status: status, latency: latency)
        log(answer, status: status, body: body, latency: latency)
        return answer
    }

    /// One line per request: at debug level for `/users/track` (thousands a minute), at info for the identity
    /// calls (rare, and each changes who a user is: an operator may need to find it).
    private func log(_ answer: BrazeAnswer, status: Int?, body: BrazeRequestBody, latency: Duration) {
        var metadata: Logger.Metadata = [
            "endpoint": "\(body.path)", "objects": "\(body.count)", "latency_ms": "\(latency.wholeMilliseconds)",
        ]
        switch answer {
        case .accepted(let errors) where !errors.isEmpty:
            metadata["refused"] = "\(errors.count)"
            logger.warning("braze refused some objects", metadata: metadata)
        case .accepted:
            metadata["status"] = "\(status ?? 0)"
            let level: Logger.Level = body.path == BrazeRequestBody.trackPath ? .debug : .info
            logger.log(level: level, "braze request answered", metadata: metadata)
        case .badRequest(let status, let message), .misconfigured(let status, let message):
            metadata["status"] = "\(status)"
            metadata["message"] = "\(message)"
            let bad = if case .badRequest = answer { true } else { false }
            logger.warning(
                bad ? "braze refused a request; bisecting" : "braze refused the key or URL", metadata: metadata)
        case .rateLimited(let after):
            // A round is logged once by the governor; each 429 only at debug level.
            metadata["retry_after_ms"] = "\(after.map { "\($0)" } ?? "none")"
            logger.debug("braze rate limit", metadata: metadata)
        case .untrustedCertificate(let reason):
            logger.error("braze's certificate could not be verified", metadata: ["reason": "\(reason)"])
        case .transient(let reason):
            // At debug level: `SinkAvailabilityMonitor` logs an outage once, with this reason.
            metadata["reason"] = "\(reason)"
            logger.debug("braze request failed", metadata: metadata)
        }
    }

    /// A short description of a transport error (AsyncHTTPClient's errors never include request headers).
    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout { return "timed out" }
        }
        return ExternalText.transportError(error)
    }
}
