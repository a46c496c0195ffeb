import Foundation

/// The built executables: `swift test` builds them next to the test bundle.
public enum Products {
    public static var directory: URL { Bundle.main.bundleURL }
    public static var queuectl: String { directory.appendingPathComponent("queuectl").path }
    public static var queued: String { directory.appendingPathComponent("queued").path }
    public static var minimalWriter: String { directory.appendingPathComponent("eventqueue-minimal-writer").path }
    public static var stormWriter: String { directory.appendingPathComponent("eventqueue-storm-writer").path }
}

public struct ProcessResult: Sendable, CustomStringConvertible {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// True when the process outlived `run`'s timeout and was SIGKILLed (`status` is then 9).
    public var timedOut = false

    /// Both streams, stdout first (for messages that may go to either).
    public var output: String { stdout + stderr }

    public var description: String {
        "exit \(status)\(timedOut ? " (killed at the timeout)" : ""): \(output.suffix(2000))"
    }
}

/// Runs a process to completion (a `ChildProcess`, awaited without blocking a cooperative thread) and returns its
/// status and output. With a `timeout`, a process still running then is SIGKILLed: a program that should have
/// stopped by itself must not hang the test, and one that should keep running (a daemon) is shown to have.
public func run(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
    timeout: Duration? = nil, in scratch: Scratch
) async throws -> ProcessResult {
    let child = try ChildProcess(
        executable, arguments, environment: environment, stdin: stdin, logDirectory: scratch.path)
    defer { child.removeOutput() }
    var result = ProcessResult(status: 0, stdout: "", stderr: "")
    if let timeout {
        (result.status, result.timedOut) = await child.exited(within: timeout)
    } else {
        result.status = await child.exited()
    }
    result.stdout = child.standardOutput
    result.stderr = child.standardError
    return result
}

/// Runs queuectl with `--db` appended.
public func queuectl(
    _ arguments: [String], db: String, stdin: String? = nil, environment: [String: String] = [:], in scratch: Scratch
) async throws -> ProcessResult {
    try await run(Products.queuectl, arguments + ["--db", db], environment: environment, stdin: stdin, in: scratch)
}

/// One JSON line of the jsonl sink: `{"id":N,"type":"...","object":{...}}`.
public struct DeliveredLine {
    public var id: Int64
    public var type: String
    public var object: [String: Any]

    public static func parse(file path: String) throws -> [DeliveredLine] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { line in
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8))
            guard let dictionary = json as? [String: Any], let id = (dictionary["id"] as? NSNumber)?.int64Value,
                let type = dictionary["type"] as? String, let object = dictionary["object"] as? [String: Any]
            else {
                throw ScratchError(message: "malformed sink line: \(line)")
            }
            return DeliveredLine(id: id, type: type, object: object)
        }
    }
}
