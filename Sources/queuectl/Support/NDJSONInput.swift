import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

/// Reads NDJSON records from a file or stdin, remembering each record's line number for error messages.
enum NDJSONInput {
    struct Line {
        var line: Int
        var record: Record
    }

    static func read(_ path: String) throws -> [Line] {
        let bytes = try readAll(path)
        var lines: [Line] = []
        var lineNumber = 0
        for slice in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            var content = slice
            if content.last == UInt8(ascii: "\r") { content = content.dropLast() }
            if content.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
            guard let text = String(validating: content, as: UTF8.self) else {
                throw fail(
                    "line \(lineNumber): invalid record: record is not valid UTF-8", status: ExitStatus.invalidInput)
            }
            do {
                lines.append(Line(line: lineNumber, record: try Record(jsonLine: text)))
            } catch {
                var located = error
                located.line = lineNumber
                throw fail(located.description, status: ExitStatus.invalidInput)
            }
        }
        return lines
    }

    private static func readAll(_ path: String) throws -> [UInt8] {
        let fd: Int32
        if path == "-" {
            fd = STDIN_FILENO
        } else {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw fail("cannot read \(path): \(String(cString: strerror(errno)))", status: ExitStatus.inputMissing)
            }
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw fail("cannot read \(path): \(String(cString: strerror(errno)))", status: ExitStatus.inputMissing)
            }
            if count == 0 { break }
            result.append(contentsOf: chunk[0..<count])
        }
        return result
    }
}
