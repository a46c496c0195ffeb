import AsyncHTTPClient
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

    /// Answers larger than this are cut: Braze's are a few hundred bytes, even with an `errors` array.
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

    /// Sends one request; throws on timeouts and connection errors.
    func send(
        method: String, url: String, headers: [(String, String)], body: [UInt8]?, logger: Logger
    ) async throws -> BrazeHTTPResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, deadline: .now() + requestTimeout, logger: logger)
        var buffer = try await response.body.collect(upTo: Self.maxResponseBytes)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
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
