#if canImport(Glibc)
    import Glibc
#endif

/// The system-wide installation's settings, as the package writes them: `/etc/eventqueue/eventqueue.conf`
/// (`$EVENTQUEUE_CONFIG` names another file). Writers running as any user find the installed queue and socket
/// through it without an environment variable; without it a non-root writer would enqueue into its own per-user
/// queue, which no system daemon drains.
///
/// The format is the one systemd's `EnvironmentFile=` reads (the unit loads the same file): `NAME=VALUE` lines,
/// `#` comments, optional quotes around the value. `queuectl` and the library read `EVENTQUEUE_DB` and
/// `EVENTQUEUE_SOCKET` from it; other names (`QUEUED_SINK`) are the daemon's and ignored here.
public struct SystemConfiguration: Sendable, Hashable {
    public static let defaultPath = "/etc/eventqueue/eventqueue.conf"

    /// The file consulted: `$EVENTQUEUE_CONFIG`, else ``defaultPath``.
    public static var path: String { QueueEnvironment.variable("EVENTQUEUE_CONFIG") ?? defaultPath }

    public var values: [String: String]

    /// The settings of ``path``, or `nil` when there is no readable file (no system installation).
    public static func load() -> SystemConfiguration? {
        guard let text = readFile(path) else { return nil }
        return SystemConfiguration(parsing: text)
    }

    public init(parsing text: String) {
        var values: [String: String] = [:]
        // "\r\n" is one Character, equal to neither "\n" nor "\r": without it a CRLF file would read as one line.
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            let line = rawLine.drop { $0 == " " || $0 == "\t" }
            guard !line.isEmpty, line.first != "#", line.first != ";", let equals = line.firstIndex(of: "=") else {
                continue
            }
            let name = line[..<equals].trimmingCharacters(from: " \t")
            var value = line[line.index(after: equals)...].trimmingCharacters(from: " \t")
            if value.count >= 2, let quote = value.first, quote == "\"" || quote == "'", value.last == quote {
                value = String(value.dropFirst().dropLast())
            }
            if !name.isEmpty { values[name] = value }
        }
        self.values = values
    }

    public var databasePath: String? { values["EVENTQUEUE_DB"].flatMap { $0.isEmpty ? nil : $0 } }

    public var socketPath: String? { values["EVENTQUEUE_SOCKET"].flatMap { $0.isEmpty ? nil : $0 } }

    /// The text of the file at `path` (its first `limit` bytes, about), or `nil` when it cannot be opened.
    package static func readFile(_ path: String, limit: Int = 1 << 20) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count < limit {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk.prefix(count))
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(from set: String) -> String {
        let trimmed = self.drop { set.contains($0) }
        var end = trimmed.endIndex
        while end > trimmed.startIndex, set.contains(trimmed[trimmed.index(before: end)]) {
            end = trimmed.index(before: end)
        }
        return String(trimmed[..<end])
    }
}
