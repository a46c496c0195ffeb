import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// `struct ucred` as `getsockopt(SO_PEERCRED)` fills it: the connecting process's pid, uid and gid.
struct PeerCredentials: Sendable, Hashable {
    var pid: Int32 = 0
    var uid: UInt32 = UInt32.max
    var gid: UInt32 = UInt32.max

    /// Reads the peer of an accepted Unix-domain connection. The kernel records the credentials at connect
    /// time, so they cannot be forged by what the client later sends.
    static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials())
        }
        return provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
    }
}

/// Who may use the control socket: root, the daemon's own user, and members of the socket file's group
/// (the "writers" group under systemd). File permissions (0660) already keep others from connecting; this
/// check also covers a socket whose mode was loosened, or one systemd passed with other permissions.
struct PeerPolicy: Sendable {
    let daemonUID: UInt32
    let socketGID: UInt32

    func allows(_ peer: PeerCredentials) -> Bool {
        peer.uid == 0 || peer.uid == daemonUID || peer.gid == socketGID
    }
}
