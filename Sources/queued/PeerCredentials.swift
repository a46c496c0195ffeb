import NIOCore
import EventQueue

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
            let groups: EventLoopFuture<PeerGroupBuffer> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERGROUPS))
            return groups.map(\.groups).recover { _ in
                // More groups than the buffer holds (ERANGE), or a kernel without SO_PEERGROUPS: the user
                // database's view of the peer's groups is the next best thing.
                PeerCredentials.databaseGroups(uid: ucred.uid, gid: ucred.gid)
            }.map { PeerCredentials(pid: ucred.pid, uid: ucred.uid, gid: ucred.gid, groups: $0) }
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

/// Room for 256 supplementary groups as `SO_PEERGROUPS` writes them. The kernel keeps a credential's groups
/// sorted and NIO zeroes the buffer, so the list is the non-zero entries (membership of gid 0 by a
/// supplementary group is not honoured; root's uid is).
struct PeerGroupBuffer: Sendable {
    var storage = InlineArray<256, UInt32>(repeating: 0)

    var groups: [UInt32] { storage.indices.map { storage[$0] }.filter { $0 != 0 } }
}

/// Who may use the control socket: root, the daemon's own user, and members of the socket file's group
/// (the "writers" group under systemd), by primary or supplementary membership. File permissions (0660)
/// already keep others from connecting; this check also covers a socket whose mode was loosened, or one
/// systemd passed with other permissions.
struct PeerPolicy: Sendable {
    let daemonUID: UInt32
    /// The group whose members are let in; `nil`: root and the daemon's user only.
    let socketGID: UInt32?

    func allows(_ peer: PeerCredentials) -> Bool {
        guard peer.uid != 0, peer.uid != daemonUID else { return true }
        guard let socketGID else { return false }
        return peer.gid == socketGID || peer.groups.contains(socketGID)
    }

    /// Who may ask for a Braze delete through the socket (`POST /forget?braze_delete=true`): root, the
    /// daemon's user and members of `ErasureKey.adminGroup` (if the group exists), the same people who can read the
    /// erasure key and so delete users without the socket. A writer may still forget within the queue.
    static func admins(daemonUID: UInt32) -> PeerPolicy {
        PeerPolicy(daemonUID: daemonUID, socketGID: getgrnam(ErasureKey.adminGroup)?.pointee.gr_gid)
    }
}
