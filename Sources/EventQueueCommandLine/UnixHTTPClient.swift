import EventQueueDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP/1.1 request over a Unix stream socket, with blocking system calls: what `queuectl drain` sends to
/// the daemon's control socket (`POST /launch`, `POST /launch?wait=true`). One request per connection, as the
/// daemon serves them (`Connection: close`).
///
/// Hand-written instead of AsyncHTTPClient on purpose: the client was the only reason `queuectl` linked NIO,
/// AsyncHTTPClient and with them Foundation and ICU, which every `queuectl enqueue` (a writer's path, one process
/// per record) then loaded at start for nothing (docs/PERFORMANCE.md, section 2).
public struct UnixHTTPClient: Sendable {
    public let socketPath: String

    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// The socket could not be connected to (`errno` in the failure: `ENOENT`, `ECONNREFUSED`, `EACCES`...).
        case cannotConnect(UnixSocketAddress.ConnectFailure)
        /// Sending or receiving failed, or no answer came within the timeout.
        case transfer(String)
        /// The answer is not an HTTP/1.1 response.
        case malformed(String)

        public var description: String {
            switch self {
            case .cannotConnect(let failure): return failure.description
            case .transfer(let reason): return reason
            case .malformed(let reason): return "not an HTTP response: \(reason)"
            }
        }
    }

    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// Sends `method target` and hands the response's head, then its body as it arrives, to the callbacks.
    /// Returns once the whole response was read; a connection that closes before that is a `.transfer` failure.
    /// `timeoutSeconds` bounds every wait for bytes (not the whole exchange: a streamed pass may last long);
    /// `deadline`, when given, bounds the whole exchange (`queuectl drain --wait --timeout`): past it the next wait
    /// for bytes fails as a `.transfer`, however much was streamed before.
    public func exchange(
        method: String, target: String, timeoutSeconds: Int, deadline: ContinuousClock.Instant? = nil,
        onHead: (HTTPResponseParser.Head) throws -> Void, onBody: ([UInt8]) throws -> Void
    ) throws {
        let descriptor: Int32
        switch UnixSocketAddress.connectedStream(to: socketPath) {
        case .success(let connected): descriptor = connected
        case .failure(let failure): throw Failure.cannotConnect(failure)
        }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request =
            "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nUser-Agent: queuectl\r\nContent-Length: 0\r\n"
            + "Connection: close\r\n\r\n"
        try Self.sendAll(Array(request.utf8), on: descriptor)
        var parser = HTTPResponseParser()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while !parser.isComplete {
            if let deadline {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { throw Failure.transfer("no whole answer by the deadline") }
                let (seconds, attoseconds) = min(left, .seconds(timeoutSeconds)).components
                var wait = timeval(
                    tv_sec: Int(seconds), tv_usec: max(1, Int(attoseconds / 1_000_000_000_000)) % 1_000_000)
                _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    throw Failure.transfer("no answer within \(timeoutSeconds) s")
                }
                throw Failure.transfer(String(cString: strerror(code)))
            }
            let events: [HTTPResponseParser.Event]
            do {
                events = count == 0 ? try parser.finish() : try parser.feed(chunk[..<count])
            } catch {
                if count == 0 { throw Failure.transfer(error.description) }
                throw Failure.malformed(error.description)
            }
            for event in events {
                switch event {
                case .head(let head): try onHead(head)
                case .body(let bytes): try onBody(bytes)
                case .end: return
                }
            }
        }
    }

    private static func sendAll(_ bytes: [UInt8], on descriptor: Int32) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                send(descriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw .transfer(String(cString: strerror(errno)))
            }
            offset += sent
        }
    }
}
