import EventQueue
import EventQueueDelivery
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import EventQueueCommandLine

/// Serves the control socket: `POST /launch[?wait=true]`, `GET /status`, `GET /metrics`, `POST /forget`. One request per
/// connection (`Connection: close`), which is all `curl` and `queuectl drain` need.
struct ControlServer: Service {
    let socket: ControlSocket
    let routes: ControlRoutes
    let logger: Logger

    /// Caps connections and times out idle and slow clients, shared by every listening socket.
    var limiter = ConnectionLimiter()

    func run() async throws {
        let listeners = socket.listeners
        try await withGracefulShutdownHandler {
            // Every socket passed by systemd is served, each with its own peer policy.
            try await withThrowingDiscardingTaskGroup { group in
                for listener in listeners {
                    group.addTask { try await accept(on: listener) }
                }
            }
        } onGracefulShutdown: {
            for listener in listeners { listener.listener.channel.close(promise: nil) }
        }
    }

    private func accept(on listener: ControlListener) async throws {
        try await listener.listener.executeThenClose { connections in
            try await withThrowingDiscardingTaskGroup { group in
                for try await connection in connections {
                    guard let ticket = limiter.admit(connection.channel.channel) else {
                        logger.notice("control socket full of busy connections; closed a new one")
                        continue
                    }
                    group.addTask {
                        await withDiscardingTaskGroup { timing in
                            timing.addTask {
                                try? await Task.sleep(for: limiter.requestTimeout)
                                limiter.expire(ticket)
                            }
                            await serve(connection, policy: listener.policy, ticket: ticket)
                            limiter.release(ticket)
                            timing.cancelAll()
                        }
                    }
                }
            }
        }
    }

    private func serve(_ connection: ControlConnection, policy: PeerPolicy, ticket: UInt64) async {
        do {
            try await connection.channel.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                for try await part in inbound {
                    switch part {
                    case .head(let received): head = received
                    case .body: continue
                    case .end:
                        guard let request = head else { continue }
                        limiter.requestReceived(ticket)
                        let writer = ResponseWriter(outbound: outbound)
                        if policy.allows(connection.peer) {
                            try await routes.respond(to: request, writer: writer, peer: connection.peer)
                        } else {
                            logger.notice(
                                "refused a control request",
                                metadata: ["uid": "\(connection.peer.uid)", "gid": "\(connection.peer.gid)"])
                            try await writer.fail(.forbidden, "uid \(connection.peer.uid) may not use this socket")
                        }
                        return
                    }
                }
            }
        } catch {
            logger.debug("control connection ended with an error", metadata: ["error": "\(error)"])
        }
    }
}

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

    /// A JSON body, one line.
    func send(_ status: HTTPResponseStatus, json: JSONValue) async throws {
        try await send(status: status, contentType: "application/json", body: json.serialized + "\n")
    }

    /// An error body (`DaemonJSON.failure`).
    func fail(_ status: HTTPResponseStatus, _ message: String, exitStatus: ExitStatus? = nil) async throws {
        try await send(status, json: DaemonJSON.failure(message, exitStatus: exitStatus))
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
