import Foundation
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A `queued` started by a test: its own directory, queue file, socket, sink file and NOTIFY_SOCKET. Always
/// stopped by `withDaemon` (SIGTERM, then SIGKILL after a timeout), so nothing outlives the test.
final class DaemonProcess: Sendable {
    let scratch: Scratch
    let db: String
    let socket: String
    let sinkFile: String
    let logFile: String
    let notify: NotifyListener
    private let child: ChildProcess

    var pid: Int32 { child.pid }

    /// Starts the daemon; unless `waitForReady` is false, returns once it sent `READY=1`.
    init(
        scratch: Scratch, db: String, name: String = "d", arguments: [String] = [], environment: [String: String] = [:],
        waitForReady: Bool = true, launcher: [String] = []
    ) async throws {
        self.scratch = scratch
        self.db = db
        socket = scratch.file("\(name).sock")
        sinkFile = scratch.file("\(name)-out.jsonl")
        logFile = scratch.file("\(name).log")
        notify = try NotifyListener(path: scratch.file("\(name)-notify-\(UUID().uuidString.prefix(8)).sock"))
        let command = launcher + [Products.queued]
        child = try ChildProcess(
            command[0],
            Array(command.dropFirst())
                + ["--db", db, "--socket", socket, "--sink", "jsonl:" + sinkFile, "--log-level", "debug"] + arguments,
            environment: ["NOTIFY_SOCKET": notify.path].merging(environment) { _, given in given },
            unsetting: [
                "JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_PID", "LISTEN_FDS", "EVENTQUEUE_SOCKET",
            ],
            logDirectory: scratch.path, outputFile: logFile)
        if waitForReady {
            guard await notify.waitFor({ $0.contains("READY=1") }) != nil else {
                _ = await stop()
                throw ScratchError(message: "queued never sent READY=1; log:\n\(self.log)")
            }
        }
    }

    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// The exit status once the daemon has exited, else `nil`.
    var exited: Int32? { child.status }

    func signal(_ number: Int32) {
        child.signal(number)
    }

    /// The exit status, or `nil` if the daemon was still running after `timeout` (it is SIGKILLed then).
    func waitForExit(timeout: Duration) async -> Int32? {
        let (status, timedOut) = await child.exited(within: timeout)
        return timedOut ? nil : status
    }

    /// SIGTERM, then SIGKILL if it has not exited within `timeout`. Returns the exit status (or -9 when killed).
    @discardableResult
    func stop(timeout: Duration = .seconds(20)) async -> Int32 {
        if let status = exited { return status }
        signal(SIGTERM)
        return await waitForExit(timeout: timeout) ?? -9
    }

    /// `curl --unix-socket` against the control socket: the HTTP status and body.
    func request(_ method: String, _ path: String) async throws -> (status: Int, body: String) {
        let result = try await run(
            "/usr/bin/curl",
            [
                "-s", "-S", "--max-time", "60", "--unix-socket", socket, "-X", method, "-w", "\n%{http_code}",
                "http://localhost" + path,
            ],
            in: scratch)
        var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let status = Int(lines.popLast() ?? "") ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// `GET /status` parsed.
    func status() async throws -> [String: Any] {
        let (code, body) = try await request("GET", "/status")
        guard code == 200, let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        else { throw ScratchError(message: "GET /status answered \(code): \(body)") }
        return object
    }

    func daemonStatus() async throws -> [String: Any] {
        try await status()["daemon"] as? [String: Any] ?? [:]
    }

    /// Waits (polling `/status`) until the daemon is idle with at least `passes` passes done; returns its state.
    func waitUntilIdle(passes: Int, timeout: Duration = .seconds(60)) async throws -> [String: Any] {
        var last: [String: Any] = [:]
        let idle = try await Wait.value(timeout: timeout) { () async throws -> [String: Any]? in
            last = try await daemonStatus()
            return last["state"] as? String == "idle" && (last["passes"] as? Int ?? 0) >= passes ? last : nil
        }
        guard let idle else {
            throw ScratchError(message: "daemon not idle after \(passes) passes: \(last); log:\n\(log)")
        }
        return idle
    }
}

/// Runs `body` with a started daemon and always stops it, even when the body throws.
func withDaemon<T>(
    _ daemon: DaemonProcess, _ body: (DaemonProcess) async throws -> T
) async throws -> T {
    do {
        let result = try await body(daemon)
        await daemon.stop()
        return result
    } catch {
        await daemon.stop()
        throw error
    }
}

/// Enqueues `count` events (users cycling over `users`) in one queuectl call.
func enqueueEvents(_ count: Int, db: String, users: Int = 10, prefix: String = "e", in scratch: Scratch) async throws {
    var lines = ""
    for index in 0..<count {
        lines += #"{"type":"event","external_id":"u\#(index % users)","name":"\#(prefix)\#(index)"}"# + "\n"
    }
    let result = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: lines, in: scratch)
    guard result.status == 0 else { throw ScratchError(message: "enqueue failed: \(result.stderr)") }
}
