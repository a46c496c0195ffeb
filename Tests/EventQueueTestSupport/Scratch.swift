import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory per test, removed when the test ends. Swift Testing runs tests in parallel when asked to,
/// so every test gets its own queue file, socket and logs.
public final class Scratch: Sendable {
    public let path: String
    public var url: URL { URL(fileURLWithPath: path) }

    public init() {
        var template = Array("/tmp/eventqueue-test-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        path = created ?? "/tmp/eventqueue-test-\(UInt64.random(in: 0...UInt64.max))"
        if created == nil { mkdir(path, 0o700) }
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// The queue file most tests use.
    public var queuePath: String { file("queue.db") }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

public struct ScratchError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}
