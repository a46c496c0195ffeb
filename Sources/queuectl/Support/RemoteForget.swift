import EventQueue
import EventQueueCommandLine
import EventQueueDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// `queuectl forget` sent to the daemon that serves the queue (`POST /forget`), so that the daemon, which holds the
/// leases in flight, forgets on its own connection and sends the erasure at once. `nil` from `forget` means no such
/// daemon (no socket, no answer, another queue, a socket not to be trusted): the caller forgets locally, which is
/// as safe (the erasure's `after` names the leases either way), only later to reach Braze.
struct RemoteForget {
    let socketPath: String
    let queuePath: String

    init(socket: String?, queuePath: String) {
        socketPath = QueueEnvironment.socketPath(explicit: socket, createDirectory: false)
        self.queuePath = queuePath
    }

    /// The daemon's report, or `nil` when no daemon serves this queue.
    func forget(_ request: ForgetRequest) throws -> ForgetReport? {
        guard access(socketPath, F_OK) == 0 else { return nil }
        do {
            try SocketTrust(socketPath: socketPath, queuePath: queuePath).verify()
        } catch {
            writeStandardError("queuectl: note: not asking the daemon on \(socketPath) (\(error)); forgetting here\n")
            return nil
        }
        let client = DaemonClient(socketPath: socketPath)
        guard let status = try? client.status(timeoutSeconds: 2).objectValue,
            let served = status["path"]?.stringValue, Status.sameFile(served, queuePath)
        else { return nil }
        let (code, body) = try exchange(request)
        let answer = (try? JSONValue.parse(String(decoding: body, as: UTF8.self)))?.objectValue ?? [:]
        guard code == 200 else {
            let message = answer["message"]?.stringValue ?? "HTTP \(code)"
            let status =
                answer["exit_status"]?.numberValue?.integerValue.flatMap { Int32(exactly: $0) }
                .flatMap(ExitStatus.init(rawValue:)) ?? .ioError
            throw fail("the daemon on \(socketPath) did not forget: \(message)", status: status)
        }
        do {
            return try ForgetReportJSON.report(answer)
        } catch {
            throw fail(error.description, status: .ioError)
        }
    }

    /// `POST /forget?...`: the status and the body, whatever the status. The daemon's scrub may take seconds on a
    /// large file, so the answer is waited for generously.
    private func exchange(_ request: ForgetRequest) throws -> (Int, [UInt8]) {
        var status = 0
        var body: [UInt8] = []
        do {
            try UnixHTTPClient(socketPath: socketPath).exchange(
                method: "POST", target: "/forget?" + request.query, timeoutSeconds: 600,
                onHead: { status = $0.status },
                onBody: { bytes in if body.count < 1 << 20 { body.append(contentsOf: bytes) } })
        } catch {
            throw fail(
                "the daemon on \(socketPath) answered the status request but not the forget (\(error)); whether it "
                    + "forgot is unknown: run the same forget again (it is harmless to repeat)", status: .ioError)
        }
        return (status, body)
    }
}
