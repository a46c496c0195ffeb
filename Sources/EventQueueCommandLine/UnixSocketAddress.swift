#if canImport(Glibc)
    import Glibc
#endif

/// A Unix socket address (`sockaddr_un`), built in one place for every socket the tools open or inspect.
public struct UnixSocketAddress: Sendable {
    /// The path does not fit in `sun_path` (108 bytes on Linux, the last one for the terminating NUL).
    public struct TooLong: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var description: String {
            "socket path too long: \(path) (\(path.utf8.count) bytes; a Unix socket path has at most "
                + "\(UnixSocketAddress.longestPath))"
        }
    }

    /// The longest path `sun_path` holds, leaving room for the NUL: 107 bytes on Linux.
    public static let longestPath = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    private var address = sockaddr_un()
    /// The length to pass to connect(2), bind(2) or sendto(2).
    public let length: socklen_t

    /// A socket bound to a path in the file system.
    public init(path: String) throws(TooLong) {
        try self.init(bytes: Array(path.utf8), abstract: false, shown: path)
    }

    /// A path as `$NOTIFY_SOCKET` gives it: a leading `@` is the abstract namespace (a NUL first byte, and the
    /// length counts exactly the name's bytes, with no trailing NUL).
    public init(notifySocket path: String) throws(TooLong) {
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        try self.init(bytes: bytes, abstract: abstract, shown: path)
    }

    private init(bytes: [UInt8], abstract: Bool, shown: String) throws(TooLong) {
        guard bytes.count <= Self.longestPath else { throw TooLong(path: shown) }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        length =
            abstract ? socklen_t(pathOffset + bytes.count) : socklen_t(MemoryLayout<sockaddr_un>.size)
    }

    /// Calls `body` with the address as the `sockaddr` the socket calls take.
    public func withSocketAddress<Result>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result
    ) rethrows -> Result {
        var copy = address
        return try withUnsafePointer(to: &copy) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }

    /// A new stream socket connected to `path` (close it when done), or the `errno` of what failed (`ENAMETOOLONG`
    /// for a path too long for `sun_path`).
    public static func connectedStream(to path: String) -> Result<Int32, ConnectFailure> {
        let address: UnixSocketAddress
        do {
            address = try UnixSocketAddress(path: path)
        } catch {
            return .failure(ConnectFailure(code: ENAMETOOLONG, description: error.description))
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(ConnectFailure(errno: errno)) }
        while true {
            if address.withSocketAddress({ connect(descriptor, $0, $1) }) == 0 { return .success(descriptor) }
            let code = errno
            if code == EINTR { continue }
            close(descriptor)
            return .failure(ConnectFailure(errno: code))
        }
    }

    /// The path a listening socket is bound to (getsockname(2)), or `nil` for an unnamed or abstract one.
    public static func boundPath(of descriptor: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let got = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard got == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }

    /// Why a connection to a Unix socket failed: the `errno`, and its text.
    public struct ConnectFailure: Error, Sendable, CustomStringConvertible {
        public var code: Int32
        public var description: String
    }
}

extension UnixSocketAddress.ConnectFailure {
    init(errno code: Int32) {
        self.init(code: code, description: String(cString: strerror(code)))
    }
}

/// Whether a process accepts connections on a Unix stream socket, found out by connecting.
public enum UnixSocketProbe {
    /// True when a connection to `path` is accepted. A path too long for `sun_path` cannot be connected to.
    public static func someoneAccepts(at path: String) -> Bool {
        guard case .success(let descriptor) = UnixSocketAddress.connectedStream(to: path) else { return false }
        close(descriptor)
        return true
    }
}
