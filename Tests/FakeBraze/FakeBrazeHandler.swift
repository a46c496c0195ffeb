import Foundation
import NIOCore
import NIOHTTP1

/// One connection's HTTP/1.1 handler: collects a request, asks the core what to do, and does it on the event
/// loop (a delay is a scheduled task, never a sleep).
final class FakeBrazeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Bodies beyond this are answered 413, as Braze does beyond 4 MB (counted as 4,000,000 bytes, the stricter
    /// reading).
    static let maxBodyBytes = 4_000_000

    private let core: FakeBrazeCore
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    private var tooLarge = false

    init(core: FakeBrazeCore) {
        self.core = core
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
            tooLarge = false
        case .body(var chunk):
            if body.readableBytes + chunk.readableBytes > Self.maxBodyBytes {
                tooLarge = true
            } else {
                body.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            handle(head, context: context)
        }
    }

    private func handle(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let bytes = Data(body.readableBytesView)
        let path = String(head.uri.prefix { $0 != "?" })
        let action: FakeBrazeAction
        if tooLarge {
            action = core.payloadTooLarge()
        } else if let admin = core.admin(method: head.method.rawValue, path: path, body: bytes) {
            action = admin
        } else if head.method == .POST, path == "/users/track" {
            action = core.track(
                authorization: head.headers.first(name: "authorization"),
                contentType: head.headers.first(name: "content-type"), body: bytes)
        } else if head.method == .POST, path == FakeBrazeCore.deletePath {
            action = core.delete(
                authorization: head.headers.first(name: "authorization"),
                contentType: head.headers.first(name: "content-type"), body: bytes)
        } else if head.method == .POST, FakeBrazeCore.identityArrays[path] != nil {
            action = core.identityCall(
                path: path, authorization: head.headers.first(name: "authorization"),
                contentType: head.headers.first(name: "content-type"), body: bytes)
        } else {
            action = FakeBrazeCore.message(404, "Not Found", [])
        }
        let keepAlive = head.isKeepAlive
        let version = head.version
        if action.delayMilliseconds > 0 {
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(action.delayMilliseconds))) {
                self.perform(action, keepAlive: keepAlive, version: version, context: context)
            }
        } else {
            perform(action, keepAlive: keepAlive, version: version, context: context)
        }
    }

    private func perform(
        _ action: FakeBrazeAction, keepAlive: Bool, version: HTTPVersion, context: ChannelHandlerContext
    ) {
        // Out of flight as the answer starts (the client may send the user's next request once it has it).
        if let request = action.request {
            core.finished(
                request: request, endpoint: action.endpoint, status: action.kind == .drop ? nil : action.status)
        }
        guard context.channel.isActive else { return }
        if case .drop = action.kind {
            context.close(promise: nil)
            return
        }
        if case .hang = action.kind { return }
        var headers = HTTPHeaders(action.headers)
        if !headers.contains(name: "content-type") { headers.add(name: "Content-Type", value: "application/json") }
        headers.add(name: "Content-Length", value: "\(action.body.count)")
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let status = HTTPResponseStatus(statusCode: action.status)
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))))
            .whenFailure { _ in }
        if case .resetMidResponse = action.kind {
            let half = ByteBuffer(bytes: action.body.prefix(action.body.count / 2))
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(half)))).whenComplete { _ in }
            context.close(promise: nil)
            return
        }
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: action.body)))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
