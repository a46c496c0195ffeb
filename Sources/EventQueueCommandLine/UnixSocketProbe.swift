#if canImport(Glibc)
    import Glibc
#endif

/// Whether a process accepts connections on a Unix stream socket, found out by connecting. Shared by the daemon
/// (a socket file is stale only if nobody listens on it) and `queuectl` (the unserved-queue notice, when the
/// kernel's socket table cannot be read).
public enum UnixSocketProbe {
    /// True when a connection to `path` is accepted. A path too long for `sun_path` cannot be connected to.
    public static func someoneAccepts(at path: String) -> Bool {
        guard case .success(let descriptor) = UnixSocketAddress.connectedStream(to: path) else { return false }
        close(descriptor)
        return true
    }
}
