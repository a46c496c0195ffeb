import AsyncHTTPClient
import EventQueueDelivery
import Logging
import NIOCore

/// A raw HTTP response, as the sink needs it.
struct BrazeHTTPResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]
}

/// The HTTP side of the sink: one `HTTPClient` (so connections are reused across requests and batches), no
/// redirects (a redirect would carry the key to another host), and a deadline per request that covers reading
/// the whole body.
final class BrazeTransport: Sendable {
    let client: HTTPClient
    let requestTimeout: TimeAmount

    /// Answers larger than this are cut (the rest is not read, and the connection is closed): Braze's are a few
    /// hundred bytes, even with an `errors` array. A cut answer is still an answer: a 2xx whose body is too large
    /// means delivered (sending the records again would duplicate them), only its `errors` cannot be read.
    static let maxResponseBytes = 1 << 20

    /// - Parameter maxConnections: HTTP/1.1 connections kept to the host; at least the requests in flight
    ///   (AsyncHTTPClient's default of 8 would queue the 9th request of `--max-in-flight 16` behind the others).
    init(connectTimeout: Duration, requestTimeout: Duration, maxConnections: Int = 8) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(connectTimeout), read: TimeAmount(requestTimeout)))
        configuration.httpVersion = .automatic
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, maxConnections)
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.requestTimeout = TimeAmount(requestTimeout)
    }

    /// A delivery's lease ended before this request went (`DeliveryLease`): it was not sent.
    struct LeaseEnded: Error, CustomStringConvertible {
        var description: String { "the delivery's lease ended before the request was sent (not sent)" }
    }

    /// Sends one request; throws on timeouts and connection errors. Within a delivery (`DeliveryLease`) it is not
    /// sent once the delivery's lease has ended. Checked here, not left to AsyncHTTPClient's deadline: it does not
    /// check a deadline already passed before it writes the request (its timer and the write race), and a request
    /// already written is not cut at the lease's end either, since renewals move that end while Braze answers (a
    /// cut would only make an accepted request look failed, and send it twice). A request without an answer, or
    /// with a gateway's 502 or 504 (Braze may still apply it), is noted on the lease.
    func send(
        method: String, url: String, headers: [(String, String)], body: [UInt8]?, logger: Logger
    ) async throws -> BrazeHTTPResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let lease = DeliveryLease.current
        if let lease, lease.remaining() == nil { throw LeaseEnded() }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: .now() + requestTimeout, logger: logger)
        } catch {
            lease?.noteUnansweredRequest()
            throw error
        }
        if response.status.code == 502 || response.status.code == 504 { lease?.noteUnansweredRequest() }
        // Not `collect(upTo:)`: it throws on an over-size body, which made a delivered batch look failed and
        // sent it again (issue 13, item 12).
        var bytes: [UInt8] = []
        for try await chunk in response.body {
            bytes.append(contentsOf: chunk.readableBytesView.prefix(Self.maxResponseBytes - bytes.count))
            if bytes.count >= Self.maxResponseBytes {
                logger.warning(
                    "the sink's answer is larger than the limit; the rest was not read",
                    metadata: ["status": "\(response.status.code)", "limit_bytes": "\(Self.maxResponseBytes)"])
                break
            }
        }
        return BrazeHTTPResponse(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: bytes)
    }

    func shutdown() async {
        try? await client.shutdown()
    }
}

extension TimeAmount {
    /// Converts a `Duration`, saturating instead of overflowing.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = overflow ? .nanoseconds(Int64.max) : .nanoseconds(nanoseconds &+ attoseconds / 1_000_000_000)
    }
}
