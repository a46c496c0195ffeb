import EventQueueDelivery
import Synchronization
import EventQueueCommandLine

/// A writer that creates a queue no daemon serves is told so on stderr, once (when the queue is created): a
/// per-user queue is legitimate for single-user setups and `--local` drains, but records that nobody will ever
/// deliver must not go unnoticed (a writer without the system configuration, or a mistyped `--db`).
enum UnservedQueueNotice {
    private static let created = Mutex<String?>(nil)

    /// Remembers that this command created the queue at `path`; ``flush()`` decides after the command succeeded.
    static func queueCreated(at path: String) {
        created.withLock { $0 = path }
    }

    /// Prints the notice when this command created a queue that no daemon on this machine serves.
    static func flush() {
        guard let path = created.withLock({ $0 }) else { return }
        let socket = QueueEnvironment.socketPath(explicit: nil, createDirectory: false)
        let system = SystemConfiguration.load()
        // The system daemon serves the system queue only: a listening socket says nothing about another file.
        let otherQueueThanSystems =
            system?.socketPath == socket && system?.databasePath.map { $0 != path } == true
        if someoneListens(at: socket), !otherQueueThanSystems { return }
        let installed =
            system?.databasePath.map { "the system queue is \($0) (\(SystemConfiguration.path))" }
            ?? "no system installation (\(SystemConfiguration.path)) names a queue"
        writeStandardError(
            "queuectl: notice: created queue \(path), which no queued daemon on this machine serves (no daemon "
                + "for it on \(socket)); its records wait there until `queuectl drain --local --db \(path)` or a "
                + "daemon on it delivers them; \(installed)\n")
    }

    /// Whether a process (or systemd, for an activated daemon) listens on the Unix socket at `path`. Read from
    /// the kernel's socket table, never by connecting: a connection to `queued.socket` would start the daemon.
    private static func someoneListens(at path: String) -> Bool {
        if let table = SystemConfiguration.readFile("/proc/net/unix", limit: .max) {
            // "Num RefCount Protocol Flags Type St Inode Path": flags 00010000 (__SO_ACCEPTCON) is a listener.
            return table.split(separator: "\n").contains { line in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                return fields.count >= 8 && fields[3] == "00010000" && fields[7...].joined(separator: " ") == path
            }
        }
        return UnixSocketProbe.someoneAccepts(at: path)
    }
}
