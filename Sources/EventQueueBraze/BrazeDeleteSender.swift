import EventQueue
import EventQueueDelivery
import Logging

/// Sends `POST /users/delete` for a `BrazeSink`: the sink's HTTP client and key, its own pacing.
///
/// Why its own `BrazeRateGovernor`: Braze limits `/users/delete` in a bucket of its own (20,000 requests per minute,
/// shared with `/users/alias/new`, `/users/alias/update`, `/users/identify` and `/users/merge`), separate from
/// `/users/track`'s 3,000 per 3 s, and its answers' `X-RateLimit-*` headers speak of that bucket; one governor for
/// both would pace each endpoint by the other's window. The same policy (`BrazeRatePolicy`) paces it: it spends what
/// the headers say is left, waits out a 429 and resends the request itself. At most `maxWindow` deletions are in
/// flight at once (4: a batch's requests go one after another, and deletions are rare next to records), which
/// stays far under the bucket's 333 a second even before the headers are read.
final class BrazeDeleteSender: BrazeDeleteRequestSender {
    private let endpoint: String
    private let sinkName: String
    private let apiKey: BrazeAPIKey
    private let transport: BrazeTransport
    private let governor: BrazeRateGovernor
    private let logger: Logger

    /// Deletion requests in flight at most.
    static let maxWindow = 4

    init(baseURL: String, sinkName: String, apiKey: BrazeAPIKey, transport: BrazeTransport, logger: Logger) {
        endpoint = baseURL + "/users/delete"
        self.sinkName = sinkName
        self.apiKey = apiKey
        self.transport = transport
        governor = BrazeRateGovernor(maxWindow: Self.maxWindow, maxRequestsPerSecond: nil, logger: logger)
        self.logger = logger
    }

    /// Sends one request once the governor lets it start, and again after every 429; `nil` when cancelled first.
    func sendDelete(_ body: BrazeDeleteBody) async -> BrazeAnswer? {
        await governor.sendUntilNotRateLimited { ticket in await self.send(body, ticket: ticket) }
    }

    /// One try: the answer classified as `/users/track`'s are (`BrazeAnswer.interpret`), the rate fed back.
    private func send(_ body: BrazeDeleteBody, ticket: BrazeRatePolicy.Ticket) async -> BrazeAnswer {
        var answer: BrazeAnswer
        var feedback = BrazeRatePolicy.Feedback.noAnswer
        do {
            let response = try await transport.send(
                method: "POST", url: endpoint,
                headers: [("Authorization", "Bearer " + apiKey.secret), ("Content-Type", "application/json")],
                body: body.bytes, logger: logger)
            answer = BrazeAnswer.interpret(
                status: response.status, headers: response.headers, body: response.body,
                nowMilliseconds: WallClock.nowMilliseconds())
            let rate = BrazeRateHeaders(response.headers)
            if case .rateLimited(let hint) = answer {
                feedback = .rateLimited(rate, hintMilliseconds: hint)
            } else {
                feedback = .answered(rate)
            }
            logger.info(
                "braze deletion answered",
                metadata: [
                    "status": "\(response.status)", "type": "\(body.type.rawValue)", "users": "\(body.ids.count)",
                ])
        } catch {
            answer =
                BrazeAnswer.untrustedCertificate(error, endpoint: sinkName)
                ?? .transient(reason: "deletion request to \(sinkName) failed: \(error)")
            logger.warning("braze deletion failed", metadata: ["error": "\(error)"])
        }
        await governor.release(ticket, feedback)
        return answer
    }
}
