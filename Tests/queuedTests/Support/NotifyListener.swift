import Foundation
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A datagram socket standing in for systemd's `NOTIFY_SOCKET`: collects what the daemon sends, so tests wait
/// for `READY=1` instead of sleeping.
final class NotifyListener: @unchecked Sendable {
    let path: String
    private let descriptor: Int32
    private let lock = NSLock()
    private var received: [String] = []

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw ScratchError(message: "socket() failed: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ScratchError(message: "notify socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw ScratchError(message: "bind(\(path)) failed: \(errno)") }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Every message received so far, oldest first (each datagram may hold several `KEY=VALUE` lines).
    var messages: [String] {
        drain()
        return lock.withLock { received }
    }

    /// Waits until a message satisfying `predicate` arrived; returns it, or `nil` after `timeout`.
    func waitFor(
        _ predicate: (String) -> Bool, timeout: Duration = .seconds(30)
    ) async -> String? {
        await Wait.value(timeout: timeout) { messages.first(where: predicate) }
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return }
            let text = String(decoding: buffer[..<count], as: UTF8.self)
            lock.withLock { received.append(text) }
        }
    }
}
