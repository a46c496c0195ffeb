import EventQueue
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// Talks to the queued daemon over its control socket (HTTP/1.1 on a Unix socket, `UnixHTTPClient`).
struct DaemonClient {
    let socketPath: String

    /// The daemon cannot be reached: nothing listens on the socket (or it cannot be opened).
    struct Unreachable: Error {}

    /// The daemon answered with an error status (403 for a peer it refuses).
    struct Refused: Error {
        var status: Int
        var message: String
    }

    /// Sends `POST /launch`; returns once the daemon accepted it (202).
    func launch() throws {
        try send(target: "/launch", timeoutSeconds: 30, success: [200, 202]) { _ in }
    }

    /// `GET /status`: the daemon's view of its queue and sink (`queuectl status` shows its rate-limit state).
    func status(timeoutSeconds: Int) throws -> JSONValue {
        var body: [UInt8] = []
        try send(method: "GET", target: "/status", timeoutSeconds: timeoutSeconds, success: [200]) { bytes in
            if body.count < 1 << 20 { body.append(contentsOf: bytes) }
        }
        return try JSONValue.parse(String(decoding: body, as: UTF8.self))
    }

    /// Sends `POST /launch?wait=true` and hands every NDJSON line of the streamed answer to `onLine`. A stream
    /// cut short ends the lines (the caller finds no summary); so does `deadline` passing (the caller tells the two
    /// apart by the time: `drain --wait --timeout`).
    func launchAndWait(deadline: ContinuousClock.Instant? = nil, _ onLine: (JSONValue) throws -> Void) throws {
        var pending: [UInt8] = []
        do {
            try send(target: "/launch?wait=true", timeoutSeconds: 24 * 3600, deadline: deadline, success: [200]) {
                bytes in
                pending.append(contentsOf: bytes)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    if !line.isEmpty { try onLine(try JSONValue.parse(line)) }
                }
            }
        } catch UnixHTTPClient.Failure.transfer, UnixHTTPClient.Failure.malformed {
            return
        }
    }

    /// One request: a failure to connect or to get an answer is `Unreachable` (`EACCES` is `Refused`: the
    /// socket's permissions keep this user out), a status not in `success` is `Refused` with the daemon's message.
    private func send(
        method: String = "POST", target: String, timeoutSeconds: Int, deadline: ContinuousClock.Instant? = nil,
        success: Set<Int>, onBody: ([UInt8]) throws -> Void
    ) throws {
        var status = 0
        var refusal: [UInt8] = []
        var answered = false
        do {
            try UnixHTTPClient(socketPath: socketPath).exchange(
                method: method, target: target, timeoutSeconds: timeoutSeconds, deadline: deadline,
                onHead: { head in
                    status = head.status
                    answered = true
                },
                onBody: { bytes in
                    if success.contains(status) {
                        try onBody(bytes)
                    } else if refusal.count < 64 * 1024 {
                        refusal.append(contentsOf: bytes)
                    }
                })
        } catch UnixHTTPClient.Failure.cannotConnect(let failure) {
            if failure.code == EACCES {
                throw Refused(
                    status: 403,
                    message: "permission denied on \(socketPath): run as its owner or join the socket's group")
            }
            throw Unreachable()
        } catch is UnixHTTPClient.Failure where !answered {
            throw Unreachable()
        }
        guard success.contains(status) else { throw Refused(status: status, message: Self.message(refusal)) }
    }

    /// The daemon's `{"message": ...}`, else the body as text.
    private static func message(_ body: [UInt8]) -> String {
        let text = String(decoding: body, as: UTF8.self)
        if let message = (try? JSONValue.parse(text))?.objectValue?["message"]?.stringValue { return message }
        return text.trimmingSpaces()
    }
}
