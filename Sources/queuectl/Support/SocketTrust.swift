import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// Whether `queuectl drain` may believe what answers on the control socket.
///
/// A daemon's answer is only worth something if the daemon is ours. The socket and the process behind it must
/// belong to one of:
/// - root (a root daemon, or systemd's socket activation, whose listening socket systemd made);
/// - the caller (a daemon started by the same user);
/// - the owner of the queue file (`--db`, `$EVENTQUEUE_DB` or the default path): the daemon's service user;
/// - the owner of the socket's directory, when root handed that directory out (its parent is root's and
///   writable by nobody else, as `/run/eventqueue` under systemd's `RuntimeDirectory=`).
///
/// Checked: every directory on the way (`SocketDirectory`: no directory another user can write to, no symbolic
/// link another user made), the socket file's owner (`lstat`, never following a link), and the peer of an actual
/// connection (`SO_PEERCRED`, which the kernel fills and nobody can forge). A socket another user planted fails
/// at least one of them.
enum SocketTrust {
    /// The uids a genuine daemon may run as.
    static func trustedOwners(socketPath: String, queuePath: String?) -> Set<uid_t> {
        var owners: Set<uid_t> = [0, getuid()]
        var info = stat()
        if let queuePath, stat(queuePath, &info) == 0 { owners.insert(info.st_uid) }
        let directory = SocketDirectory.parent(of: socketPath)
        let grandparent = SocketDirectory.parent(of: directory)
        var directoryInfo = stat()
        var parentInfo = stat()
        if lstat(directory, &directoryInfo) == 0, directoryInfo.st_mode & S_IFMT == S_IFDIR,
            stat(grandparent, &parentInfo) == 0, parentInfo.st_uid == 0, parentInfo.st_mode & 0o022 == 0
        {
            owners.insert(directoryInfo.st_uid)
        }
        return owners
    }

    /// Why the directory, the socket file or the listening process is not one of ours, or `nil` when all are
    /// (as `SocketDirectory.problem`). A missing socket is not this check's business (the connect reports it).
    static func problem(socketPath: String, queuePath: String?) -> String? {
        let owners = trustedOwners(socketPath: socketPath, queuePath: queuePath)
        if let problem = SocketDirectory.problem(socketPath: socketPath, trustedOwners: owners) {
            return "the control socket's directory is not safe: \(problem)"
        }
        var info = stat()
        guard lstat(socketPath, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            return "\(socketPath) is not a socket (a symbolic link or another file); it is not followed"
        }
        guard owners.contains(info.st_uid) else {
            return "\(socketPath) belongs to uid \(info.st_uid), which is not root, you, or the queue file's owner: "
                + "another user may be impersonating the daemon; its answers are not trusted"
        }
        if let peer = peerUID(socketPath), !owners.contains(peer) {
            return "the process listening on \(socketPath) runs as uid \(peer), which is not root, you, or the "
                + "queue file's owner: another user may be impersonating the daemon"
        }
        return nil
    }

    /// The uid of the process that listens on `path` (`SO_PEERCRED` of a connection), or `nil` when nothing
    /// answers.
    static func peerUID(_ path: String) -> uid_t? {
        guard case .success(let descriptor) = UnixSocketAddress.connectedStream(to: path) else { return nil }
        defer { close(descriptor) }
        // struct ucred: pid, uid, gid.
        var credentials: (Int32, UInt32, UInt32) = (0, UInt32.max, UInt32.max)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return credentials.1
    }
}
