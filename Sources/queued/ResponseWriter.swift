import NIOCore
import NIOHTTP1

/// Writes one HTTP response, whole or streamed.
struct ResponseWriter {
    let outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>

    func send(status: HTTPResponseStatus, contentType: String, body: String) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        headers.add(name: "Connection", value: "close")
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
        try await outbound.write(.body(.byteBuffer(ByteBuffer(string: body))))
        try await outbound.write(.end(nil))
    }

    func startStream(contentType: String) async throws {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Transfer-Encoding", value: "chunked")
        headers.add(name: "Connection", value: "close")
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)))
    }

    func streamChunk(_ text: String) async throws {
        try await outbound.write(.body(.byteBuffer(ByteBuffer(string: text))))
    }

    func endStream() async throws {
        try await outbound.write(.end(nil))
    }
}
