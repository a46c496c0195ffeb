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

/// The listening control socket: bound to a path, or passed by systemd (every socket passed is served).
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
                    let bound = UnixSocketAddress.boundPath(of: descriptor)
                    listeners.append(ControlListener(listener: listener, policy: Self.policy(forSocketAt: bound)))
                } catch {
                    for opened in listeners { try? await opened.listener.channel.close() }
                    throw .socket(path: "fd \(descriptor) from systemd", reason: "\(error)")
                }
            }
            let names = activated.map { "fd \($0)" }.joined(separator: ", ")
            return ControlSocket(listeners: listeners, ownedPath: nil, description: names + " (socket activation)")
        }
        // Never bind in a directory another user controls (`SocketDirectory`).
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
        return ControlSocket(
            listeners: [ControlListener(listener: listener, policy: Self.policy(forSocketAt: path))],
            ownedPath: path, description: path)
    }

    /// Removes the socket file this daemon created (never anything else at that path).
    func removeSocketFile() {
        guard let ownedPath else { return }
        var info = stat()
        if lstat(ownedPath, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { unlink(ownedPath) }
    }

    /// Who may use the socket bound at `path`: its file's group, else (no path, or no file) the daemon's group.
    private static func policy(forSocketAt path: String?) -> PeerPolicy {
        var info = stat()
        let group = path.map { stat($0, &info) == 0 } == true ? info.st_gid : getgid()
        return PeerPolicy(daemonUID: getuid(), socketGID: group)
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

/// The sockets systemd passed (socket activation: `LISTEN_PID`, `LISTEN_FDS`, fds 3...), checked before they are
/// served. Every passed fd must be a listening Unix stream socket: the control protocol relies on `SO_PEERCRED`,
/// which only Unix sockets have, and a datagram socket or a plain file cannot be served at all. Anything else is
/// refused at start (exit 78, one line naming the fd and what it is).
enum ActivatedSockets {
    /// The passed fds, or `nil` when systemd passed none to this process. Unsets the variables, so children do
    /// not think the sockets are theirs.
    static func take() throws(DaemonFailure) -> [CInt]? {
        guard let pid = QueueEnvironment.variable("LISTEN_PID").flatMap(Int32.init), pid == getpid(),
            let countText = QueueEnvironment.variable("LISTEN_FDS")
        else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        guard let count = Int(countText), (1...64).contains(count) else {
            throw .configuration("LISTEN_FDS=\(countText) is not valid: systemd passes 1 to 64 sockets")
        }
        let descriptors = (0..<count).map { CInt(3 + $0) }
        for descriptor in descriptors {
            if let problem = problem(descriptor) {
                throw .configuration(
                    "socket activation: fd \(descriptor) \(problem); use ListenStream= with a socket path")
            }
        }
        return descriptors
    }

    /// Why `descriptor` cannot be served, or `nil` when it is a listening Unix stream socket.
    static func problem(_ descriptor: CInt) -> String? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return "is not open" }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return "is not a socket" }
        guard let domain = option(descriptor, SO_DOMAIN), let type = option(descriptor, SO_TYPE),
            let listening = option(descriptor, SO_ACCEPTCONN)
        else { return "cannot be inspected: \(String(cString: strerror(errno)))" }
        guard domain == AF_UNIX else {
            return "is not a Unix socket (address family \(domain)): the control socket needs peer credentials"
        }
        guard type == Int32(SOCK_STREAM.rawValue) else { return "is not a stream socket (type \(type))" }
        guard listening == 1 else { return "is not listening" }
        return nil
    }

    private static func option(_ descriptor: CInt, _ name: Int32) -> Int32? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
    }
}
