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

/// The HTTP side of the sink: one `HTTPClient` (connections reused), no redirects (one would carry the key to
/// another host), and a deadline per request that covers reading the whole body.
final class BrazeTransport: Sendable {
    let client: HTTPClient
    let requestTimeout: TimeAmount

    /// Answers larger than this are cut (Braze's are a few hundred bytes). A cut answer is still an answer: a 2xx
    /// means delivered, only its `errors` cannot be read.
    static let maxResponseBytes = 1 << 20

    /// - Parameter maxConnections: HTTP/1.1 connections kept to the host: at least the requests in flight.
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

    /// Sends one request; throws on timeouts and connection errors. Not sent once the delivery's lease has ended
    /// (`DeliveryLease`): checked here, since AsyncHTTPClient's timer races its write; a request already written
    /// is not cut (renewals move the end, and a cut would send an accepted request twice). A request without an
    /// answer, or with a gateway's 502 or 504, is noted on the lease: Braze may still apply it.
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
        // Not `collect(upTo:)`: it throws on an over-size body, making a delivered batch look failed.
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
