import Foundation
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A `queued` started by a test: its own directory, queue file, socket, sink file and NOTIFY_SOCKET. Always
/// stopped by `withDaemon` (SIGTERM, then SIGKILL after a timeout), so nothing outlives the test.
final class DaemonProcess: @unchecked Sendable {
    let scratch: Scratch
    let db: String
    let socket: String
    let sinkFile: String
    let logFile: String
    let notify: NotifyListener
    private let process = Process()
    private let lock = NSLock()
    private var exitStatus: Int32?

    var pid: Int32 { process.processIdentifier }

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
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments =
            Array(command.dropFirst())
            + ["--db", db, "--socket", socket, "--sink", "jsonl:" + sinkFile, "--log-level", "debug"] + arguments
        var merged = ProcessInfo.processInfo.environment
        for key in ["JOURNAL_STREAM", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_PID", "LISTEN_FDS", "EVENTQUEUE_SOCKET"]
        {
            merged[key] = nil
        }
        merged["NOTIFY_SOCKET"] = notify.path
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logFile))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [weak self] finished in
            guard let self else { return }
            self.lock.withLock { self.exitStatus = finished.terminationStatus }
        }
        try processLaunchLock.withLock { try process.run() }
        try? log.close()
        if waitForReady {
            guard await notify.waitFor({ $0.contains("READY=1") }) != nil else {
                _ = await stop()
                throw ScratchError(message: "queued never sent READY=1; log:\n\(self.log)")
            }
        }
    }

    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    var exited: Int32? { lock.withLock { exitStatus } }

    func signal(_ number: Int32) {
        if exited == nil { kill(process.processIdentifier, number) }
    }

    /// Waits for the process to exit; `nil` after `timeout`.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = exited { return status }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return exited
    }

    /// SIGTERM, then SIGKILL if it has not exited within `timeout`. Returns the exit status (or -9 when killed).
    @discardableResult
    func stop(timeout: Duration = .seconds(20)) async -> Int32 {
        if let status = exited { return status }
        signal(SIGTERM)
        if let status = await waitForExit(timeout: timeout) { return status }
        signal(SIGKILL)
        _ = await waitForExit(timeout: .seconds(10))
        return -9
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

    /// Polls `/status` until the daemon is idle with at least `passes` passes done.
    func waitUntilIdle(passes: Int, timeout: Duration = .seconds(60)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        var last: [String: Any] = [:]
        while ContinuousClock.now < deadline {
            last = try await daemonStatus()
            if last["state"] as? String == "idle", (last["passes"] as? Int ?? 0) >= passes { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ScratchError(message: "daemon not idle after \(passes) passes: \(last); log:\n\(log)")
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
