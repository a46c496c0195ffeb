import EventQueue
import EventQueueDelivery
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import EventQueueCommandLine
import Synchronization

/// Serves the control socket (`ControlRoutes`), one request per connection (`Connection: close`), which is all
/// `curl` and `queuectl drain` need.
struct ControlServer: Service {
    let socket: ControlSocket
    let routes: ControlRoutes
    let logger: Logger

    /// Shared by every listening socket.
    var limiter = ConnectionLimiter()

    func run() async throws {
        let listeners = socket.listeners
        try await withGracefulShutdownHandler {
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
        try await head(status, contentType, ("Content-Length", "\(body.utf8.count)"))
        try await streamChunk(body)
        try await endStream()
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
        try await head(.ok, contentType, ("Transfer-Encoding", "chunked"))
    }

    /// The head: `Content-Type`, how the body's length is told (`length`), and `Connection: close`.
    private func head(
        _ status: HTTPResponseStatus, _ contentType: String, _ length: (String, String)
    ) async throws {
        let headers = HTTPHeaders([("Content-Type", contentType), length, ("Connection", "close")])
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
    }

    func streamChunk(_ text: String) async throws {
        try await outbound.write(.body(.byteBuffer(ByteBuffer(string: text))))
    }

    func endStream() async throws {
        try await outbound.write(.end(nil))
    }
}

/// Bounds the control socket's connections, so idle clients cannot exhaust the file table:
/// - at most `capacity` connections are open at once, well below any sensible `ulimit -n`, so `accept` never
///   meets `EMFILE`;
/// - a connection must deliver its whole request within `requestTimeout` (idle and slowloris clients are closed);
/// - when the cap is reached, the oldest connection still waiting for its request is closed to make room, so a
///   launch (whose request arrives at once) keeps working however many idle connections others open. Only when
///   every open connection is busy (streaming a `?wait=true` pass) is the newcomer closed instead.
final class ConnectionLimiter: Sendable {
    let capacity = 64
    let requestTimeout: Duration = .seconds(10)

    private struct Entry {
        var channel: any Channel
        var hasRequest: Bool
    }

    private struct State {
        var next: UInt64 = 0
        /// By admission number, so the first key is the oldest.
        var open: [UInt64: Entry] = [:]
    }

    private let state = Mutex(State())

    /// Admits `channel`, closing the oldest idle connection when full; `nil` (and `channel` closed) when every
    /// open connection is busy.
    func admit(_ channel: any Channel) -> UInt64? {
        let (ticket, victim): (UInt64?, (any Channel)?) = state.withLock { state in
            var victim: (any Channel)?
            if state.open.count >= capacity {
                guard let oldest = state.open.filter({ !$0.value.hasRequest }).keys.min() else {
                    return (nil, channel)
                }
                victim = state.open.removeValue(forKey: oldest)?.channel
            }
            state.next += 1
            state.open[state.next] = Entry(channel: channel, hasRequest: false)
            return (state.next, victim)
        }
        victim?.close(promise: nil)
        return ticket
    }

    /// The request arrived whole: from now on the connection is busy, never evicted or timed out.
    func requestReceived(_ ticket: UInt64) {
        state.withLock { $0.open[ticket]?.hasRequest = true }
    }

    /// Closes the connection if its request has not arrived (called when `requestTimeout` has passed).
    func expire(_ ticket: UInt64) {
        let channel: (any Channel)? = state.withLock { state in
            guard let entry = state.open[ticket], !entry.hasRequest else { return nil }
            state.open[ticket] = nil
            return entry.channel
        }
        channel?.close(promise: nil)
    }

    func release(_ ticket: UInt64) {
        state.withLock { _ = $0.open.removeValue(forKey: ticket) }
    }
}
