import EventQueueTestSupport
import Testing

@testable import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// The one builder of `sockaddr_un`: paths up to 107 bytes, a clear error beyond, the abstract namespace for
/// `$NOTIFY_SOCKET`.
@Suite struct UnixSocketAddressTests {
    @Test func aPathTooLongForSunPathIsRefusedWithItsLength() {
        let path = "/tmp/" + String(repeating: "a", count: 103)  // 108 bytes: no room for the NUL
        #expect(path.utf8.count == UnixSocketAddress.longestPath + 1)
        #expect(throws: UnixSocketAddress.TooLong.self) { try UnixSocketAddress(path: path) }
        do {
            _ = try UnixSocketAddress(path: path)
        } catch {
            #expect(error.description.contains("socket path too long: \(path) (108 bytes"))
        }
        guard case .failure(let failure) = UnixSocketAddress.connectedStream(to: path) else {
            Issue.record("a path too long was connected to")
            return
        }
        #expect(failure.code == ENAMETOOLONG)
        #expect(!UnixSocketProbe.someoneAccepts(at: path))
    }

    @Test func theLongestPathFitsAndConnects() throws {
        let scratch = Scratch()
        let padding = UnixSocketAddress.longestPath - scratch.path.utf8.count - 1
        try #require(padding > 0)
        let path = scratch.file(String(repeating: "s", count: padding))
        #expect(path.utf8.count == UnixSocketAddress.longestPath)
        let address = try UnixSocketAddress(path: path)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(listener) }
        #expect(address.withSocketAddress { bind(listener, $0, $1) } == 0)
        #expect(listen(listener, 1) == 0)
        #expect(UnixSocketAddress.boundPath(of: listener) == path)
        #expect(UnixSocketProbe.someoneAccepts(at: path))
    }

    @Test func aMissingSocketSaysSo() {
        let scratch = Scratch()
        guard case .failure(let failure) = UnixSocketAddress.connectedStream(to: scratch.file("none.sock")) else {
            Issue.record("connected to a socket that does not exist")
            return
        }
        #expect(failure.code == ENOENT)
    }

    @Test func anAtSignIsTheAbstractNamespaceCountingOnlyTheName() throws {
        let address = try UnixSocketAddress(notifySocket: "@eventqueue-notify")
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        #expect(Int(address.length) == pathOffset + "@eventqueue-notify".utf8.count)
        let firstByte = address.withSocketAddress { pointer, _ in
            pointer.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { un in
                withUnsafeBytes(of: un.pointee.sun_path) { $0[0] }
            }
        }
        #expect(firstByte == 0)
    }
}
