import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Launches are serialized: Foundation's `Process.run()` on Linux is not documented as safe to call from several
/// threads at once. The processes themselves still run concurrently.
public let processLaunchLock = NSLock()

/// A process a test starts, signals and awaits: the one way the tests run a program (`run` is this, awaited to
/// its exit). Output goes to files, so no pipe can fill up and stall the child, and the exit is awaited through
/// Foundation's termination handler, never polled. A child still running when the last reference goes is
/// SIGKILLed, so nothing outlives its test.
public final class ChildProcess: @unchecked Sendable {
    // Foundation's Process is not Sendable; the mutable state below goes through `lock`.
    private let process = Process()
    private let lock = NSLock()
    private var exitStatus: Int32?
    private var waiters: [CheckedContinuation<Int32, Never>] = []
    private let inputPath: String?
    public let stdoutPath: String
    public let stderrPath: String

    /// - Parameters:
    ///   - environment: added to this process's environment, after `unsetting` removed what must not be inherited.
    ///   - stdin: what the child reads (from a file), or `nil` for `/dev/null`.
    ///   - logDirectory: where the output files go (`<program>-<id>.out` and `.err`).
    ///   - outputFile: both streams to this one file instead, as a daemon's log.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], unsetting: [String] = [],
        stdin: String? = nil, logDirectory: String, outputFile: String? = nil
    ) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for key in unsetting { merged[key] = nil }
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        let stem = logDirectory + "/\(URL(fileURLWithPath: executable).lastPathComponent)-\(UUID().uuidString)"
        stdoutPath = outputFile ?? stem + ".out"
        stderrPath = outputFile ?? stem + ".err"
        for path in Set([stdoutPath, stderrPath]) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        let err = stderrPath == stdoutPath ? out : try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        // Closed here once the child has them: a test that runs thousands of processes ran out of descriptors
        // when they were left to deinit.
        defer {
            try? out.close()
            if err !== out { try? err.close() }
        }
        process.standardOutput = out
        process.standardError = err
        var input: FileHandle?
        defer { try? input?.close() }
        if let stdin {
            let path = stem + ".in"
            _ = FileManager.default.createFile(atPath: path, contents: Data(stdin.utf8))
            inputPath = path
            input = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            process.standardInput = input
        } else {
            inputPath = nil
            process.standardInput = FileHandle.nullDevice
        }
        process.terminationHandler = { [weak self] finished in self?.finish(finished.terminationStatus) }
        try processLaunchLock.withLock { try process.run() }
    }

    public var pid: Int32 { process.processIdentifier }

    /// The exit status once the child has exited (the signal number for a signal death, as Foundation reports
    /// it), else `nil`.
    public var status: Int32? { lock.withLock { exitStatus } }

    public var hasExited: Bool { status != nil }

    public var terminatedBySignal: Bool { hasExited && process.terminationReason == .uncaughtSignal }

    public var standardOutput: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var standardError: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Sends `signal` unless the child has exited (its pid may belong to another process by then).
    public func signal(_ signal: Int32) {
        lock.withLock {
            if exitStatus == nil { kill(process.processIdentifier, signal) }
        }
    }

    /// The exit status, once the child exits.
    public func exited() async -> Int32 {
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

    /// The exit status; if the child has not exited within `timeout`, it is sent `signal` (SIGKILL unless said
    /// otherwise) and awaited, and `timedOut` is true.
    public func exited(within timeout: Duration, thenSend signal: Int32 = SIGKILL) async -> (
        status: Int32, timedOut: Bool
    ) {
        let deadline = Task { [weak self] () -> Bool in
            // A deadline for a child that hangs, not a synchronisation: the exit itself is awaited below.
            guard (try? await Task.sleep(for: timeout)) != nil, let self, !self.hasExited else { return false }
            self.signal(signal)
            return true
        }
        let status = await exited()
        deadline.cancel()
        return (status, await deadline.value)
    }

    /// Removes the output files (storms start thousands of processes).
    public func removeOutput() {
        for path in [stdoutPath, stderrPath] + (inputPath.map { [$0] } ?? []) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    private func finish(_ status: Int32) {
        lock.lock()
        exitStatus = status
        let pending = waiters
        waiters = []
        lock.unlock()
        for waiter in pending { waiter.resume(returning: status) }
    }

    deinit {
        if exitStatus == nil { kill(process.processIdentifier, SIGKILL) }
    }
}
