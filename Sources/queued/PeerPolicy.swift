import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

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

    /// Who may ask for a Braze delete through the socket (`POST /forget?braze_delete=true`, issue 39 #3): root, the
    /// daemon's user and members of `ErasureKey.adminGroup` (if the group exists), the same people who can read the
    /// erasure key and so delete users without the socket. A writer may still forget within the queue.
    static func admins(daemonUID: UInt32) -> PeerPolicy {
        PeerPolicy(daemonUID: daemonUID, socketGID: getgrnam(ErasureKey.adminGroup)?.pointee.gr_gid)
    }
}
