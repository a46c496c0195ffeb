import Dispatch
import EventQueue
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Appends one JSON line per record to a file or to stdout:
/// `{"id": <record id>, "type": "event"|"attribute"|"purchase", "object": <the Braze object>}`, and one per
/// erasure (`erase`): `{"id": <id>, "type": "erasure", "erasure": "<identifier type>", "object": <the identifier>}`.
///
/// A batch is one `write`, `fsync`ed before any record is reported delivered (an acked record survives a power
/// loss); a failed one is truncated back to where it began, retried without an attempt, and stops the pass. Before
/// each batch the path is compared with the open file (device and inode) and reopened when it names another file
/// or none (rotation). `write` and `fsync` block, so they run on the sink's own dispatch queue, not the
/// cooperative pool.
public final class JSONLinesSink: Sink {
    private struct OpenFile {
        var descriptor: Int32
        var reopenRequested = false
    }

    /// Why a batch could not be written: always the host's problem (a full disk, an I/O error), never a record's.
    private struct LocalFailure: Error {
        var message: String
    }

    private let file: Mutex<OpenFile>
    private let io = DispatchQueue(label: "eventqueue.jsonl-sink")
    /// The file's path; `nil` for stdout, which is never reopened nor truncated.
    private let path: String?
    /// Whether the path names a regular file, the only kind that can be truncated back or rotated.
    private let regular: Bool
    public let name: String

    static let openFlags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC

    /// Opens `path` for appending (created 0640), or stdout when `path` is `-`.
    public init(path: String) throws(SinkError) {
        name = "jsonl:" + path
        if path == "-" {
            file = Mutex(OpenFile(descriptor: STDOUT_FILENO))
            self.path = nil
            regular = false
            return
        }
        let fd = Glibc.open(path, Self.openFlags, 0o640)
        guard fd >= 0 else {
            throw SinkError.cannotOpen(spec: name, reason: String(cString: strerror(errno)))
        }
        file = Mutex(OpenFile(descriptor: fd))
        self.path = path
        var info = stat()
        regular = fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    deinit {
        if path != nil { file.withLock { _ = Glibc.close($0.descriptor) } }
    }

    /// Opens the path again before the next batch (SIGHUP after a rotation, as log daemons do).
    public func reopen() {
        file.withLock { $0.reopenRequested = true }
    }

    public func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(batch.count * 256)
        for record in batch {
            Self.appendLine(to: &buffer, id: record.id, type: record.kind.rawValue, object: record.object)
        }
        return await writeLines(buffer, ids: batch.map(\.id))
    }

    /// One line per erasure, in the records' stream, so whoever reads the file deletes the user where the records
    /// went, after the user's earlier records and before later ones.
    public func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
        var buffer: [UInt8] = []
        for erasure in erasures {
            Self.appendLine(
                to: &buffer, id: erasure.id, type: "erasure", erasure: erasure.identifierType.rawValue,
                object: JSONObject(members: [erasure.user.brazeMember]))
        }
        return await writeLines(buffer, ids: erasures.map(\.id))
    }

    /// `{"id":ID,"type":"TYPE"[,"erasure":"ERASURE"],"object":OBJECT}` and a newline.
    private static func appendLine(
        to buffer: inout [UInt8], id: Int64, type: String, erasure: String? = nil, object: JSONObject
    ) {
        buffer.append(contentsOf: #"{"id":"#.utf8)
        buffer.append(contentsOf: String(id).utf8)
        buffer.append(contentsOf: #","type":""#.utf8)
        buffer.append(contentsOf: type.utf8)
        if let erasure {
            buffer.append(contentsOf: #"","erasure":""#.utf8)
            buffer.append(contentsOf: erasure.utf8)
        }
        buffer.append(contentsOf: #"","object":"#.utf8)
        object.serialize(into: &buffer)
        buffer.append(contentsOf: "}\n".utf8)
    }

    /// Writes and syncs `bytes` on the sink's queue: every id delivered, or all retried without counting an attempt.
    private func writeLines(_ bytes: [UInt8], ids: [Int64]) async -> DeliveryReport {
        let failure: LocalFailure? = await withCheckedContinuation { continuation in
            io.async {
                continuation.resume(returning: self.writeAndSync(bytes))
            }
        }
        let reason = failure.map { "\(name): \($0.message)" }
        var outcomes: [Int64: DeliveryOutcome] = [:]
        for id in ids { outcomes[id] = reason.map { .retry(reason: $0, cause: .destination) } ?? .delivered }
        let halt = reason.map {
            SinkHalt(kind: .unavailable, reason: $0 + " (the records are kept; no attempt was counted)")
        }
        return DeliveryReport(outcomes: outcomes, halt: halt)
    }

    /// Writes `bytes` and fsyncs, on the sink's queue; on failure the file is left as it was.
    private func writeAndSync(_ bytes: [UInt8]) -> LocalFailure? {
        file.withLock { file in
            if regular, let path, let failure = Self.reopenIfRotated(&file, path: path) { return failure }
            let fd = file.descriptor
            // With O_APPEND every write goes to the end: where the file ends now is where this batch begins.
            let before = regular ? lseek(fd, 0, SEEK_END) : -1
            var failure = bytes.withUnsafeBytes { Self.writeAll(fd, $0) }
            if failure == nil, fsync(fd) != 0, errno != EINVAL, errno != EROFS, errno != ENOTSUP {
                failure = LocalFailure(message: "fsync failed: \(String(cString: strerror(errno)))")
            }
            if failure == nil, regular {
                var info = stat()
                if fstat(fd, &info) == 0, info.st_nlink == 0 {
                    // Removed while written: acked into a file nobody can read, the records would be lost.
                    file.reopenRequested = true
                    failure = LocalFailure(message: "the file was removed while written; reopening its path")
                }
            }
            if failure != nil, before >= 0, ftruncate(fd, before) != 0 {
                failure?.message +=
                    "; could not truncate it back to \(before) bytes: \(String(cString: strerror(errno)))"
            }
            return failure
        }
    }

    /// Opens the path again when asked to, or when it no longer names the open file. A path that cannot be opened
    /// keeps the old descriptor and fails the batch.
    private static func reopenIfRotated(_ file: inout OpenFile, path: String) -> LocalFailure? {
        var named = stat()
        var open = stat()
        let same =
            stat(path, &named) == 0 && fstat(file.descriptor, &open) == 0 && named.st_dev == open.st_dev
            && named.st_ino == open.st_ino
        guard file.reopenRequested || !same else { return nil }
        let fd = Glibc.open(path, openFlags, 0o640)
        guard fd >= 0 else {
            return LocalFailure(message: "cannot reopen \(path): \(String(cString: strerror(errno)))")
        }
        _ = Glibc.close(file.descriptor)
        file = OpenFile(descriptor: fd)
        return nil
    }

    /// Writes every byte (handling short writes and EINTR).
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> LocalFailure? {
        var offset = 0
        while offset < bytes.count {
            let count = write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                return LocalFailure(message: "write failed: \(String(cString: strerror(errno)))")
            }
            offset += count
        }
        return nil
    }
}
