import Foundation
import EventQueueTestSupport

/// A child process the test can signal and await, with output to files (a full pipe can never stall it).
final class ChildProcess: @unchecked Sendable {
    // Foundation's Process is not Sendable; every access below goes through `lock`.
    private let process = Process()
    private let lock = NSLock()
    private var exitStatus: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []
    let stdoutPath: String
    let stderrPath: String

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], logDirectory: String)
        throws
    {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        let id = UUID().uuidString.prefix(8)
        stdoutPath = logDirectory + "/\(URL(fileURLWithPath: executable).lastPathComponent)-\(id).out"
        stderrPath = logDirectory + "/\(URL(fileURLWithPath: executable).lastPathComponent)-\(id).err"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [weak self] finished in self?.finish(finished.terminationStatus) }
        try processLaunchLock.withLock { try process.run() }
    }

    var pid: Int32 { process.processIdentifier }

    func signal(_ signal: Int32) {
        lock.lock()
        let running = exitStatus == nil
        lock.unlock()
        if running { kill(process.processIdentifier, signal) }
    }

    /// The exit status (or the signal number for a signal death, as Foundation reports it).
    func exited() async -> Int32 {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let exitStatus {
                lock.unlock()
                continuation.resume(returning: exitStatus)
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    /// Waits up to `seconds` for the exit; SIGKILLs the process if it is still running then.
    func exited(within seconds: Double) async -> (status: Int32, timedOut: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let status = currentStatus() { return (status, false) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        signal(SIGKILL)
        return (await exited(), true)
    }

    private func currentStatus() -> Int32? {
        lock.withLock { exitStatus }
    }

    var hasExited: Bool { currentStatus() != nil }

    var terminatedBySignal: Bool { process.terminationReason == .uncaughtSignal }

    var standardError: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    private func finish(_ status: Int32) {
        lock.lock()
        exitStatus = status
        let pending = waiters
        waiters = []
        lock.unlock()
        for waiter in pending { waiter.resume(returning: status) }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
