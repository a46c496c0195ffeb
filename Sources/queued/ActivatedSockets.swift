import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// The sockets systemd passed (socket activation: `LISTEN_PID`, `LISTEN_FDS`, fds 3...), checked before they are
/// served (issue 16).
///
/// Every passed fd must be a listening Unix stream socket: the control protocol relies on `SO_PEERCRED`, which
/// only Unix sockets have, and a datagram socket or a plain file cannot be served at all. Anything else is refused
/// at start (exit 78, one line naming the fd and what it is). Every socket passed is served.
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
