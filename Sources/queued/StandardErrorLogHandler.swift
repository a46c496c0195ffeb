import EventQueue
import EventQueueDelivery
import Logging
import EventQueueCommandLine

/// One line per message on stderr. Under systemd (`JOURNAL_STREAM` set) each line starts with the syslog
/// priority `<N>`, which journald strips and stores as the entry's level; elsewhere lines carry a timestamp and
/// the level in words. Callers log names and counts, never keys.
struct StandardErrorLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level
    let label: String
    private let journald: Bool

    init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
        self.journald = QueueEnvironment.variable("JOURNAL_STREAM") != nil
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var line: String
        if journald {
            line = "<\(Self.priority(event.level))>"
        } else {
            line = ISO8601.format(unixMilliseconds: WallClock.nowMilliseconds()) + " \(event.level) "
        }
        line += "\(label): \(event.message)"
        for key in merged.keys.sorted() {
            line += " \(key)=\(merged[key].map { "\($0)" } ?? "")"
        }
        // Messages and metadata carry text from outside (a sink's answer, a path): registered secrets are
        // redacted and every control character escaped, so nothing here rewrites a terminal or leaks a key.
        writeStandardError(ExternalText.sanitized(line, newlinesAsSpace: true) + "\n")
    }

    /// syslog(3) priorities, as journald reads them from a `<N>` prefix.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }
}
