import Glibc

/// A fresh directory per test (Swift Testing runs tests in parallel), removed at deinit.
///
/// A copy of `TemporaryDirectory` from EventQueueTests (another test target), renamed so the two are not
/// confused.
final class DeliveryScratchDirectory: Sendable {
    let path: String

    init() {
        var template = Array("/tmp/eventqueue-delivery-test-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        path = created ?? "/tmp/eventqueue-delivery-test-\(UInt64.random(in: 0...UInt64.max))"
        if created == nil { mkdir(path, 0o700) }
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// The queue file most tests use.
    var queuePath: String { file("queue.db") }

    deinit {
        Self.removeTree(path)
    }

    static func removeTree(_ path: String) {
        guard let directory = opendir(path) else {
            unlink(path)
            return
        }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let child = path + "/" + name
            var info = stat()
            if lstat(child, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                removeTree(child)
            } else {
                unlink(child)
            }
        }
        closedir(directory)
        rmdir(path)
    }
}
