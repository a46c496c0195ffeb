// A minimal `/users/track` for throughput runs, in its own process (`eventqueue-bench child-track-server`):
// SwiftNIO, checks the bearer key, reads the whole body, answers 201 `{"message":"success"}`. It does no JSON
// work, so it keeps up with any client on this machine; `fake-braze` (which checks Braze's whole contract with
// Foundation's JSON) is measured beside it for reference.
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

final class TrackHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let expectedAuthorization: String
    private var authorized = false
    private var keepAlive = true
    private var isTrack = false

    init(apiKey: String) {
        expectedAuthorization = "Bearer " + apiKey
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            authorized = head.headers.first(name: "authorization") == expectedAuthorization
            keepAlive = head.isKeepAlive
            isTrack = head.method == .POST && head.uri == "/users/track"
        case .body:
            break
        case .end:
            let (status, body): (HTTPResponseStatus, String) =
                !isTrack
                ? (.notFound, #"{"message":"not found"}"#)
                : authorized
                    ? (.created, #"{"message":"success"}"#) : (.unauthorized, #"{"message":"Invalid API Key"}"#)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.utf8.count))
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            let keepAlive = self.keepAlive
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { channel.close(promise: nil) }
            }
        }
    }
}

/// `child-track-server KEY`: serves until stdin closes or 15 minutes pass; prints `listening on PORT`.
func runTrackServerChild(_ arguments: [String]) throws -> Never {
    let apiKey = arguments.first ?? "bench-key"
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let channel = try ServerBootstrap(group: group)
        .serverChannelOption(ChannelOptions.backlog, value: 256)
        .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
        .childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(TrackHandler(apiKey: apiKey))
            }
        }
        .bind(host: "127.0.0.1", port: 0).wait()
    print("listening on \(channel.localAddress?.port ?? 0)")
    fflush(nil)
    alarm(900)
    var byte: UInt8 = 0
    while read(STDIN_FILENO, &byte, 1) > 0 {}
    exit(0)
}
