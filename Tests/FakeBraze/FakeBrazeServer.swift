import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A local stand-in for Braze's `POST /users/track` and `POST /users/delete`: it enforces the documented contract on its own (with
/// Foundation's JSON, not EventQueue's) and injects faults, so the sink can be tested over real HTTP and
/// benchmarked without Braze. Runs on SwiftNIO's shared event loops; nothing blocks per request.
public final class FakeBrazeServer: Sendable {
    /// The listening channel; `nil` while not listening (`stopListening`: connections are refused).
    private let channel: Mutex<(any Channel)?>
    private let core: FakeBrazeCore
    private let connections: ConnectionRegistry
    private let host: String
    /// The port bound (useful with port 0).
    public let port: Int
    /// `http://127.0.0.1:PORT`, the base URL to give a sink.
    public let baseURL: String

    private init(channel: any Channel, core: FakeBrazeCore, connections: ConnectionRegistry, host: String) {
        self.channel = Mutex(channel)
        self.core = core
        self.connections = connections
        let port = channel.localAddress?.port ?? 0
        self.port = port
        self.host = host
        baseURL = "http://\(channel.localAddress?.ipAddress ?? host):\(port)"
    }

    /// Binds and starts serving. `port: 0` picks a free port (see `port`), so tests running in parallel never
    /// collide.
    public static func start(
        apiKey: String, host: String = "127.0.0.1", port: Int = 0, configuration: FakeBrazeFaults = .none
    ) async throws -> FakeBrazeServer {
        let core = FakeBrazeCore(apiKey: apiKey, faults: configuration)
        let registry = ConnectionRegistry()
        let channel = try await bind(host: host, port: port, core: core, registry: registry)
        return FakeBrazeServer(channel: channel, core: core, connections: registry, host: host)
    }

    private static func bind(
        host: String, port: Int, core: FakeBrazeCore, registry: ConnectionRegistry
    ) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                registry.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(FakeBrazeHandler(core: core))
                }
            }
            .bind(host: host, port: port)
            .get()
    }

    /// Stops listening and closes every open connection.
    public func stop() async throws {
        await stopListening()
    }

    /// An outage of the kind "connection refused": stops listening on the port and closes every open connection
    /// (kept-alive ones too, or the client would go on using them). `startListening()` ends it.
    public func stopListening() async {
        let listener = channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await listener?.close()
        let open = connections.channels.withLock { Array($0.values) }
        for connection in open { try? await connection.close() }
    }

    /// Listens again on the same port after `stopListening()` (nothing when already listening).
    public func startListening() async throws {
        guard channel.withLock({ $0 == nil }) else { return }
        let listener = try await Self.bind(host: host, port: port, core: core, registry: connections)
        channel.withLock { $0 = listener }
    }

    /// The objects of every 2xx request, in arrival order.
    public func received() -> [ReceivedObject] { core.received() }

    /// Request counters.
    public func stats() -> FakeBrazeStats { core.stats() }

    /// Every `/users/delete` answered 2xx, in arrival order.
    public func deletions() -> [ReceivedDeletion] { core.deletions() }

    /// Every `/users/identify`, `/users/alias/new` and `/users/merge` request answered 2xx, in arrival order.
    public func identityCalls() -> [ReceivedIdentityCall] { core.identityCalls() }

    /// Both endpoints' requests, arriving and answered, in the order the fake saw them (`FakeBrazeEvent`).
    public func timeline() -> [FakeBrazeEvent] { core.timeline() }

    /// Replaces the faults (and reseeds the generator).
    public func setFaults(_ faults: FakeBrazeFaults) { core.setFaults(faults) }

    /// Forgets received objects and counters (faults are kept).
    public func reset() { core.reset() }
}

/// The accepted connections, so `stop()` can close them (closing the listener leaves them open).
private final class ConnectionRegistry: Sendable {
    let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        channels.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [weak self] _ in
            _ = self?.channels.withLock { $0.removeValue(forKey: id) }
        }
    }
}
