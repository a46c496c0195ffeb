#if canImport(Glibc)
    import Glibc
#endif

/// Whether a process accepts connections on a Unix stream socket, found out by connecting. Shared by the daemon
/// (a socket file is stale only if nobody listens on it) and `queuectl` (the unserved-queue notice, when the
/// kernel's socket table cannot be read): one place builds the address.
public enum UnixSocketProbe {
    /// True when a connection to `path` is accepted. A path too long for `sun_path` cannot be connected to.
    public static func someoneAccepts(at path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return connected == 0
    }
}
