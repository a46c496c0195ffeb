import Dispatch
import EventQueue
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Appends one JSON line per record to a file or to stdout:
/// `{"id": <record id>, "type": "event"|"attribute"|"purchase", "object": <the Braze object>}`.
///
/// A batch is written with one `write` and then `fsync`ed before any record is reported delivered, so a record
/// acked (deleted from the queue) is always in the file, even after a power loss. On a pipe or terminal
/// (`jsonl:-` to stdout) there is nothing to fsync; the line is written before the ack all the same.
///
/// The `write` and `fsync` run on the sink's own dispatch queue, never on a Swift concurrency thread: an fsync
/// blocks for milliseconds, and on a 2-core machine the cooperative pool has two threads (the hazard
/// `QueueStore`'s executor exists to avoid).
public final class JSONLinesSink: Sink {
    private let descriptor: Mutex<Int32>
    private let io = DispatchQueue(label: "eventqueue.jsonl-sink")
    private let ownsDescriptor: Bool
    public let name: String

    /// Opens `path` for appending (created 0640), or stdout when `path` is `-`.
    public init(path: String) throws(SinkError) {
        name = "jsonl:" + path
        if path == "-" {
            descriptor = Mutex(STDOUT_FILENO)
            ownsDescriptor = false
            return
        }
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard fd >= 0 else {
            throw SinkError.cannotOpen(spec: name, reason: String(cString: strerror(errno)))
        }
        descriptor = Mutex(fd)
        ownsDescriptor = true
    }

    deinit {
        if ownsDescriptor { descriptor.withLock { _ = Glibc.close($0) } }
    }

    public func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(batch.count * 256)
        for record in batch {
            buffer.append(contentsOf: #"{"id":"#.utf8)
            buffer.append(contentsOf: String(record.id).utf8)
            buffer.append(contentsOf: #","type":""#.utf8)
            buffer.append(contentsOf: record.kind.rawValue.utf8)
            buffer.append(contentsOf: #"","object":"#.utf8)
            record.object.serialize(into: &buffer)
            buffer.append(contentsOf: "}\n".utf8)
        }
        let bytes = buffer
        let failure: String? = await withCheckedContinuation { continuation in
            io.async {
                continuation.resume(returning: self.writeAndSync(bytes))
            }
        }
        if let failure {
            return DeliveryReport(.retry(reason: "\(name): \(failure)"), for: batch)
        }
        return DeliveryReport(.delivered, for: batch)
    }

    /// Writes `bytes` and fsyncs; on the sink's queue. Returns an error message on failure.
    private func writeAndSync(_ bytes: [UInt8]) -> String? {
        descriptor.withLock { fd in
            let written = bytes.withUnsafeBytes { Self.writeAll(fd, $0) }
            if let written { return written }
            if fsync(fd) != 0, errno != EINVAL, errno != EROFS, errno != ENOTSUP {
                return "fsync failed: \(String(cString: strerror(errno)))"
            }
            return nil
        }
    }

    /// Writes every byte (handling short writes and EINTR); returns an error message on failure.
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> String? {
        var offset = 0
        while offset < bytes.count {
            let count = write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                return "write failed: \(String(cString: strerror(errno)))"
            }
            offset += count
        }
        return nil
    }
}
