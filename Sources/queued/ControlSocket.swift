import EventQueueDelivery
import NIOCore
import NIOHTTP1
import NIOPosix
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// One accepted control connection: the HTTP stream and who is on the other end.
struct ControlConnection: Sendable {
    var channel: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>
    var peer: PeerCredentials
}

/// One listening socket and who may use it.
struct ControlListener: Sendable {
    let listener: NIOAsyncChannel<ControlConnection, Never>
    let policy: PeerPolicy
}

/// The listening control socket: bound to a path, or passed by systemd (socket activation; every socket passed
/// is served).
struct ControlSocket: Sendable {
    let listeners: [ControlListener]
    /// The path to remove at shutdown; `nil` when systemd owns the socket.
    let ownedPath: String?
    let description: String

    /// Serves fds 3... when systemd passed sockets (`LISTEN_PID` is us, `LISTEN_FDS` >= 1); otherwise removes a
    /// stale socket at `path` (only if it is a socket), binds, and makes it 0660.
    static func open(path: String, group: any EventLoopGroup) async throws(DaemonFailure) -> ControlSocket {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<ControlConnection> = { channel in
            PeerCredentials.of(channel).flatMapThrowing { peer in
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                let http = try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                    wrappingChannelSynchronously: channel)
                return ControlConnection(channel: http, peer: peer)
            }
        }
        if let activated = try ActivatedSockets.take() {
            var listeners: [ControlListener] = []
            for descriptor in activated {
                do {
                    let listener = try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
                    let group = groupOfSocket(descriptor: descriptor) ?? getgid()
                    listeners.append(
                        ControlListener(
                            listener: listener, policy: PeerPolicy(daemonUID: getuid(), socketGID: group)))
                } catch {
                    for opened in listeners { try? await opened.listener.channel.close() }
                    throw .socket(path: "fd \(descriptor) from systemd", reason: "\(error)")
                }
            }
            let names = activated.map { "fd \($0)" }.joined(separator: ", ")
            return ControlSocket(listeners: listeners, ownedPath: nil, description: names + " (socket activation)")
        }
        // Never bind in a directory another user controls (issue 13, item 1).
        if let problem = SocketDirectory.problem(socketPath: path, trustedOwners: [getuid()], trustedGroup: getgid()) {
            // A missing directory is not an attack: it gets the same words as a failed bind would.
            throw .socket(path: path, reason: problem.hasPrefix("the directory ") ? problem : "refused: \(problem)")
        }
        try removeStaleSocket(at: path)
        let listener: NIOAsyncChannel<ControlConnection, Never>
        do {
            listener = try await bootstrap.bind(unixDomainSocketPath: path, childChannelInitializer: initializer)
        } catch {
            throw DaemonFailure.bindFailure(path: path, error: error)
        }
        guard chmod(path, 0o660) == 0 else {
            let reason = String(cString: strerror(errno))
            try? await listener.channel.close()
            throw .socket(path: path, reason: "chmod 0660 failed: \(reason)")
        }
        var info = stat()
        let group = stat(path, &info) == 0 ? info.st_gid : getgid()
        return ControlSocket(
            listeners: [ControlListener(listener: listener, policy: PeerPolicy(daemonUID: getuid(), socketGID: group))],
            ownedPath: path, description: path)
    }

    /// Removes the socket file this daemon created (never anything else at that path).
    func removeSocketFile() {
        guard let ownedPath else { return }
        var info = stat()
        if lstat(ownedPath, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { unlink(ownedPath) }
    }

    /// The group of the file an activated socket is bound to, for the peer policy.
    private static func groupOfSocket(descriptor: CInt) -> gid_t? {
        guard let path = UnixSocketAddress.boundPath(of: descriptor) else { return nil }
        var info = stat()
        return stat(path, &info) == 0 ? info.st_gid : nil
    }

    private static func removeStaleSocket(at path: String) throws(DaemonFailure) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw .socket(path: path, reason: "a file that is not a socket is in the way (it was left untouched)")
        }
        if UnixSocketProbe.someoneAccepts(at: path) {
            throw .socket(
                path: path,
                reason: "another daemon is listening on it; stop that one, or give this one another --socket")
        }
        guard unlink(path) == 0 else {
            throw .socket(path: path, reason: "cannot remove the stale socket: \(String(cString: strerror(errno)))")
        }
    }
}
