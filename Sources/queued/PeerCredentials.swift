import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// `struct ucred` as `getsockopt(SO_PEERCRED)` fills it: the connecting process's pid, uid and gid, plus its
/// supplementary groups (`SO_PEERGROUPS`).
struct PeerCredentials: Sendable, Hashable {
    var pid: Int32 = 0
    var uid: UInt32 = UInt32.max
    var gid: UInt32 = UInt32.max
    /// The peer's supplementary groups. A writer that joined the writers' group with `usermod -aG` is a member
    /// only through this list: comparing the primary gid alone refused every such writer.
    var groups: [UInt32] = []

    /// Reads the peer of an accepted Unix-domain connection. The kernel records the credentials at connect
    /// time, so they cannot be forged by what the client later sends.
    static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials> {
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(PeerCredentials())
        }
        let credentials: EventLoopFuture<Ucred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return credentials.flatMap { ucred in
            let peer = PeerCredentials(pid: ucred.pid, uid: ucred.uid, gid: ucred.gid)
            let groups: EventLoopFuture<PeerGroupBuffer> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERGROUPS))
            return groups.map { buffer in
                var withGroups = peer
                withGroups.groups = buffer.groups
                return withGroups
            }.recover { _ in
                // More groups than the buffer holds (ERANGE), or a kernel without SO_PEERGROUPS: the user
                // database's view of the peer's groups is the next best thing.
                var withGroups = peer
                withGroups.groups = PeerCredentials.databaseGroups(uid: peer.uid, gid: peer.gid)
                return withGroups
            }
        }
    }

    /// The groups the user database gives `uid` (`getgrouplist`), for when the kernel's list is not available.
    static func databaseGroups(uid: UInt32, gid: UInt32) -> [UInt32] {
        var record = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &record, &buffer, buffer.count, &result) == 0, result != nil, let name = record.pw_name
        else { return [] }
        var count: Int32 = 64
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            let previous = count
            if getgrouplist(name, gid, &groups, &count) >= 0 { return Array(groups.prefix(Int(count))) }
            if count <= previous { return [] }
        }
    }
}

/// `struct ucred`: `pid_t pid; uid_t uid; gid_t gid;`.
struct Ucred: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = UInt32.max
    var gid: UInt32 = UInt32.max
}
