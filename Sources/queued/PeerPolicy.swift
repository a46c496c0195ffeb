/// Who may use the control socket: root, the daemon's own user, and members of the socket file's group
/// (the "writers" group under systemd), by primary or supplementary membership. File permissions (0660)
/// already keep others from connecting; this check also covers a socket whose mode was loosened, or one
/// systemd passed with other permissions.
struct PeerPolicy: Sendable {
    let daemonUID: UInt32
    let socketGID: UInt32

    func allows(_ peer: PeerCredentials) -> Bool {
        peer.uid == 0 || peer.uid == daemonUID || peer.gid == socketGID || peer.groups.contains(socketGID)
    }
}
