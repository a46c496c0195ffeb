import AsyncHTTPClient
import EventQueue
import Foundation
import NIOCore

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
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        do {
            return try await HTTPClient.shared.execute(request, timeout: timeout)
        } catch {
            throw Unreachable(underlying: error)
        }
    }

    private static func text(of response: HTTPClientResponse) async throws -> String {
        let body = try await response.body.collect(upTo: 64 * 1024)
        let text = String(buffer: body)
        if let message = (try? JSONValue.parse(text))?.objectValue?["message"]?.stringValue { return message }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

private struct InvalidSocketPath: Error, CustomStringConvertible {
    var description: String
}
