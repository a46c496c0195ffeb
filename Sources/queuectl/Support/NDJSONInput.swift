import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// Reads NDJSON input (a file or stdin) one line at a time, so memory is bounded by the longest line allowed
/// whatever the input's size, and remembers each line's number for error messages.
///
/// A line longer than a record may be stops the reading at once (the rest is never read: `--ndjson /dev/zero`
/// fails after 256 KiB). Input that is not a regular file (a pipe, a terminal, a FIFO) is first copied to an
/// unlinked temporary file: the input is read twice (checked in full, then enqueued), and a slow producer must
/// not make every other writer wait on it.
final class NDJSONInput {
    /// The longest line read: a record at its largest (`Record(jsonLine:)`'s bound), plus a `\r`.
    static let maximumLineBytes = RecordEncoder.maximumPayloadBytes + 1

    let path: String
    private let fd: Int32
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var atEOF = false
    private(set) var lineNumber = 0
    /// Where `buffer[0]` is in `fd` (stdin redirected from a file may start anywhere): with `start`, where the next
    /// line begins (`position`).
    private var bufferOffset: off_t = 0

    /// A place in the input to come back to with `seek(to:)`: where a line begins, and how many lines came before.
    struct Position {
        fileprivate let offset: off_t
        fileprivate let lineNumber: Int
    }

    /// Where the next line (blank or not) begins.
    var position: Position { Position(offset: bufferOffset + off_t(start), lineNumber: lineNumber) }

    /// Opens `path` (`-`: stdin), spooling non-regular input first (checking line lengths as it goes).
    init(path: String) throws {
        self.path = path
        buffer = [UInt8](repeating: 0, count: 1 << 16)
        var source: Int32
        if path == "-" {
            source = STDIN_FILENO
        } else {
            source = open(path, O_RDONLY | O_CLOEXEC)
            guard source >= 0 else {
                throw fail("cannot read \(path): \(String(cString: strerror(errno)))", status: ExitStatus.inputMissing)
            }
        }
        var info = stat()
        if fstat(source, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            fd = source
            bufferOffset = max(0, lseek(source, 0, SEEK_CUR))
            return
        }
        defer { if source != STDIN_FILENO { close(source) } }
        fd = try Self.spool(source, path: path)
    }

    deinit {
        if fd != STDIN_FILENO { close(fd) }
    }

    /// Goes back (or on) to `position`, taken from this input: the next line read is the one that began there.
    func seek(to position: Position) throws {
        guard lseek(fd, position.offset, SEEK_SET) >= 0 else {
            throw fail("cannot reread \(path): \(String(cString: strerror(errno)))", status: ExitStatus.inputMissing)
        }
        (start, end, atEOF, lineNumber, bufferOffset) = (0, 0, false, position.lineNumber, position.offset)
    }

    /// The next non-blank line (without its `\n` or `\r\n`) with its 1-based number, or `nil` at the end. What a
    /// line is (blank, text, not UTF-8) is `NDJSONLine`'s rule, shared with the fuzz oracle; this type only reads.
    func next() throws -> (line: Int, text: String)? {
        while let bytes = try nextLine() {
            lineNumber += 1
            switch NDJSONLine(bytes: bytes) {
            case .blank:
                continue
            case .invalidUTF8:
                throw fail("line \(lineNumber): \(NDJSONLine.invalidUTF8Message)", status: ExitStatus.invalidInput)
            case .text(let text):
                return (lineNumber, text)
            }
        }
        return nil
    }

    /// The bytes of the next line, or `nil` at the end; throws on a line over `maximumLineBytes`.
    private func nextLine() throws -> [UInt8]? {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom..<end].firstIndex(of: NDJSONLine.newline) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                return line
            }
            if end - start > Self.maximumLineBytes { throw Self.tooLong(lineNumber + 1) }
            if atEOF {
                guard end > start else { return nil }
                let line = Array(buffer[start..<end])
                start = end
                return line
            }
            if start > 0 {
                buffer.withUnsafeMutableBufferPointer { pointer in
                    guard let base = pointer.baseAddress else { return }
                    memmove(base, base + start, end - start)
                }
                bufferOffset += off_t(start)
                end -= start
                start = 0
            }
            if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
            searchFrom = end
            let count = try Self.read(fd, into: &buffer, at: end, path: path)
            if count == 0 { atEOF = true } else { end += count }
        }
    }

    private static func tooLong(_ line: Int) -> ExitCode {
        fail(
            "line \(line): invalid record: record must be at most \(Self.maximumLineBytes - 1) bytes (the line is "
                + "longer; stopped reading there, nothing was enqueued)", status: ExitStatus.invalidInput)
    }

    private static func read(_ fd: Int32, into buffer: inout [UInt8], at offset: Int, path: String) throws -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in
                Glibc.read(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw fail("cannot read \(path): \(String(cString: strerror(errno)))", status: ExitStatus.inputMissing)
        }
    }

    /// Copies `source` to an unlinked temporary file and returns it opened at its start. Stops at the first line
    /// longer than a record may be, so an endless input (a `/dev/zero`) neither fills memory nor the disk.
    private static func spool(_ source: Int32, path: String) throws -> Int32 {
        let directory = QueueEnvironment.variable("TMPDIR") ?? "/tmp"
        var template = Array((directory + "/queuectl-ndjson-XXXXXX").utf8CString)
        let spoolFD = template.withUnsafeMutableBufferPointer { $0.baseAddress.map { mkstemp($0) } ?? -1 }
        guard spoolFD >= 0 else {
            throw fail(
                "cannot spool \(path) to \(directory) (set TMPDIR to a writable directory): "
                    + String(cString: strerror(errno)), status: ExitStatus.ioError)
        }
        template.withUnsafeBufferPointer { _ = $0.baseAddress.map { unlink($0) } }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var currentLine = 0
        var lineNumber = 1
        do {
            while true {
                let count = try read(source, into: &chunk, at: 0, path: path)
                if count == 0 { break }
                for byte in chunk[0..<count] {
                    if byte == UInt8(ascii: "\n") {
                        currentLine = 0
                        lineNumber += 1
                    } else {
                        currentLine += 1
                        if currentLine > maximumLineBytes { throw tooLong(lineNumber) }
                    }
                }
                if let code = chunk.withUnsafeBytes({
                    writeAll(spoolFD, UnsafeRawBufferPointer(rebasing: $0[..<count]))
                }) {
                    throw fail(
                        "cannot spool \(path) to \(directory) (set TMPDIR to a directory with room): "
                            + String(cString: strerror(code)), status: ExitStatus.ioError)
                }
            }
        } catch {
            close(spoolFD)
            throw error
        }
        lseek(spoolFD, 0, SEEK_SET)
        return spoolFD
    }
}
