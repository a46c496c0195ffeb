import AsyncHTTPClient
import EventQueue
import Foundation
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Talks to the queued daemon over its control socket (HTTP/1.1 on a Unix socket).
struct DaemonClient {
    let socketPath: String

    /// The daemon cannot be reached: nothing listens on the socket (or it cannot be opened).
    struct Unreachable: Error {
        var underlying: any Error
    }

    /// The daemon answered with an error status (403 for a peer it refuses).
    struct Refused: Error {
        var status: UInt
        var message: String
    }

    /// Sends `POST /launch`; returns once the daemon accepted it (202).
    func launch() async throws {
        let response = try await send(uri: "/launch", timeout: .seconds(30))
        guard response.status == .accepted || response.status == .ok else {
            throw Refused(status: response.status.code, message: try await Self.text(of: response))
        }
    }

    /// Sends `POST /launch?wait=true` and hands every NDJSON line of the streamed answer to `onLine`.
    func launchAndWait(_ onLine: (JSONValue) throws -> Void) async throws {
        let response = try await send(uri: "/launch?wait=true", timeout: .hours(24))
        guard response.status == .ok else {
            throw Refused(status: response.status.code, message: try await Self.text(of: response))
        }
        var pending: [UInt8] = []
        for try await chunk in response.body {
            pending.append(contentsOf: chunk.readableBytesView)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if !line.isEmpty { try onLine(try JSONValue.parse(line)) }
            }
        }
    }

    private func send(uri: String, timeout: TimeAmount) async throws -> HTTPClientResponse {
        guard let url = URL(httpURLWithSocketPath: socketPath, uri: uri) else {
            throw Unreachable(underlying: InvalidSocketPath(description: "cannot make a URL for socket \(socketPath)"))
        }
        // The HTTP client keeps retrying a connection for its whole connect timeout; a missing or dead socket
        // is known at once with one connect(2).
        if let problem = Self.probe(socketPath) {
            if problem.code == EACCES {
                throw Refused(
                    status: 403,
                    message: "permission denied on \(socketPath): run as its owner or join the socket's group")
            }
            throw Unreachable(underlying: problem)
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        do {
            return try await HTTPClient.shared.execute(request, timeout: timeout)
        } catch {
            throw Unreachable(underlying: error)
        }
    }

    /// Connects once to the socket and hangs up: `nil` when something listens, else why not.
    static func probe(_ path: String) -> InvalidSocketPath? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            return InvalidSocketPath(description: String(cString: strerror(errno)), code: errno)
        }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            return InvalidSocketPath(description: "socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return connected == 0 ? nil : InvalidSocketPath(description: String(cString: strerror(errno)), code: errno)
    }

    private static func text(of response: HTTPClientResponse) async throws -> String {
        let body = try await response.body.collect(upTo: 64 * 1024)
        let text = String(buffer: body)
        if let message = (try? JSONValue.parse(text))?.objectValue?["message"]?.stringValue { return message }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Why the control socket cannot be used: the `errno` of the connect, when there was one.
struct InvalidSocketPath: Error, CustomStringConvertible {
    var description: String
    var code: Int32 = 0
}
