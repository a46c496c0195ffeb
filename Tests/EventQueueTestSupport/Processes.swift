import Foundation

/// The built executables: `swift test` builds them next to the test bundle.
public enum Products {
    public static var directory: URL { Bundle.main.bundleURL }
    public static var queuectl: String { directory.appendingPathComponent("queuectl").path }
    public static var queued: String { directory.appendingPathComponent("queued").path }
    public static var minimalWriter: String { directory.appendingPathComponent("eventqueue-minimal-writer").path }
    public static var stormWriter: String { directory.appendingPathComponent("eventqueue-storm-writer").path }
}

public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Launches are serialized: Foundation's `Process.run()` on Linux is not documented as safe to call from several
/// threads at once. The processes themselves still run concurrently.
public let processLaunchLock = NSLock()

/// Runs a process to completion without blocking a cooperative thread: output goes to files (no pipe can fill
/// up and stall the child), and the wait is a termination handler.
public func run(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
    in scratch: Scratch
) async throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for (key, value) in environment { merged[key] = value }
    process.environment = merged
    let id = UUID().uuidString
    let outPath = scratch.file("out-\(id)")
    let errPath = scratch.file("err-\(id)")
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    process.standardOutput = out
    process.standardError = err
    var input: FileHandle?
    defer { try? input?.close() }  // not left to deinit: a test that runs thousands of processes ran out of fds
    if let stdin {
        let inPath = scratch.file("in-\(id)")
        _ = FileManager.default.createFile(atPath: inPath, contents: Data(stdin.utf8))
        input = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
        process.standardInput = input
    } else {
        process.standardInput = FileHandle.nullDevice
    }
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus) }
        do {
            try processLaunchLock.withLock { try process.run() }
        } catch {
            process.terminationHandler = nil
            continuation.resume(throwing: error)
        }
    }
    try out.close()
    try err.close()
    let stdout = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    let stderr = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    try? FileManager.default.removeItem(atPath: outPath)
    try? FileManager.default.removeItem(atPath: errPath)
    return ProcessResult(status: status, stdout: stdout, stderr: stderr)
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
