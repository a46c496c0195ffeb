import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

/// Where the queue file is and how to open it when the command line does not say: the environment variables
/// and defaults shared by `queuectl` and the daemon, so both always find the same file.
///
/// - `EVENTQUEUE_DB`: the queue file. Default: `$STATE_DIRECTORY/queue.db` under systemd, else the system
///   installation's (`EVENTQUEUE_DB` in ``SystemConfiguration``, `/etc/eventqueue/eventqueue.conf`), else
///   `/var/lib/eventqueue/queue.db` for root, else `${XDG_STATE_HOME:-~/.local/state}/eventqueue/queue.db`.
/// - `EVENTQUEUE_BUSY_TIMEOUT_MS` (default 5000), `EVENTQUEUE_DURABILITY` (`full` or `normal`),
///   `EVENTQUEUE_MIN_FREE_BYTES` (writers' free-space reserve, default 16 MiB; 0 disables).
/// - `EVENTQUEUE_SOCKET`: the daemon's control socket. Default: `$RUNTIME_DIRECTORY/control.sock` under systemd,
///   else the system installation's (`EVENTQUEUE_SOCKET` in ``SystemConfiguration``), else
///   `/run/eventqueue/control.sock` for root, else
///   `${XDG_RUNTIME_DIR:-/tmp/eventqueue-$UID}/eventqueue/control.sock`.
public enum QueueEnvironment {
    public static func variable(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    /// Where the queue file is, as both tools' `--help` says it: the order `databasePath` follows.
    public static let databaseHelp = """
        The queue file is --db, else $EVENTQUEUE_DB, else $STATE_DIRECTORY/queue.db, else EVENTQUEUE_DB in \
        /etc/eventqueue/eventqueue.conf ($EVENTQUEUE_CONFIG), else /var/lib/eventqueue/queue.db for root, else \
        ${XDG_STATE_HOME:-~/.local/state}/eventqueue/queue.db.
        """

    /// The default queue file when neither `--db` nor `EVENTQUEUE_DB` is given.
    public static func defaultDatabasePath() -> String {
        if let state = variable("STATE_DIRECTORY") {
            // systemd may pass several directories separated by colons; the first is ours.
            let first = state.split(separator: ":").first.map(String.init) ?? state
            return first + "/queue.db"
        }
        if let system = SystemConfiguration.load()?.databasePath { return system }
        if getuid() == 0 { return "/var/lib/eventqueue/queue.db" }
        let base = variable("XDG_STATE_HOME") ?? ((variable("HOME") ?? ".") + "/.local/state")
        return base + "/eventqueue/queue.db"
    }

    /// Resolves the queue path: the explicit one, else `EVENTQUEUE_DB`, else the default (whose directory is
    /// created, since nobody chose it by hand). An explicit path's directory must already exist.
    ///
    /// `createDirectory: false` is for commands that only inspect a queue: they must never create anything.
    /// The system installation's path is never created here either: the package's tmpfiles.d entry owns it.
    public static func databasePath(explicit: String?, createDirectory: Bool = true) -> String {
        if let explicit { return explicit }
        if let fromEnvironment = variable("EVENTQUEUE_DB") { return fromEnvironment }
        let path = defaultDatabasePath()
        if createDirectory, path != SystemConfiguration.load()?.databasePath { createDirectories(for: path) }
        return path
    }

    /// The default control socket when neither `--socket` nor `EVENTQUEUE_SOCKET` is given.
    public static func defaultSocketPath() -> String {
        if let runtime = variable("RUNTIME_DIRECTORY") {
            let first = runtime.split(separator: ":").first.map(String.init) ?? runtime
            return first + "/control.sock"
        }
        if let system = SystemConfiguration.load()?.socketPath { return system }
        if getuid() == 0 { return "/run/eventqueue/control.sock" }
        let base = variable("XDG_RUNTIME_DIR") ?? "/tmp/eventqueue-\(getuid())"
        return base + "/eventqueue/control.sock"
    }

    /// Resolves the control socket path the same way for the daemon and `queuectl`: the explicit one, else
    /// `EVENTQUEUE_SOCKET`, else the default (whose directory is created, since nobody chose it by hand).
    public static func socketPath(explicit: String?) -> String {
        if let explicit { return explicit }
        if let fromEnvironment = variable("EVENTQUEUE_SOCKET") { return fromEnvironment }
        let path = defaultSocketPath()
        if path != SystemConfiguration.load()?.socketPath { createDirectories(for: path) }
        return path
    }

    /// Queue options from the environment, with command-line overrides applied on top.
    public static func options(
        busyTimeoutMilliseconds: Int? = nil, durability: QueueOptions.Durability? = nil
    ) throws(ConfigurationError) -> QueueOptions {
        var options = QueueOptions()
        if let value = variable("EVENTQUEUE_BUSY_TIMEOUT_MS") {
            guard let parsed = Int(value), OptionRange.busyTimeoutMilliseconds.contains(parsed) else {
                throw ConfigurationError(
                    variable: "EVENTQUEUE_BUSY_TIMEOUT_MS", value: value,
                    expected: "milliseconds, 0 to \(OptionRange.busyTimeoutMilliseconds.upperBound)")
            }
            options.busyTimeoutMilliseconds = parsed
        }
        if let value = variable("EVENTQUEUE_DURABILITY") {
            guard let parsed = QueueOptions.Durability(rawValue: value) else {
                throw ConfigurationError(variable: "EVENTQUEUE_DURABILITY", value: value, expected: "full or normal")
            }
            options.durability = parsed
        }
        if let value = variable("EVENTQUEUE_MIN_FREE_BYTES") {
            guard let parsed = Int64(value), OptionRange.minimumFreeBytes.contains(parsed) else {
                throw ConfigurationError(
                    variable: "EVENTQUEUE_MIN_FREE_BYTES", value: value,
                    expected: "bytes, 0 to \(OptionRange.minimumFreeBytes.upperBound)")
            }
            options.minimumFreeBytes = parsed
        }
        if let busyTimeoutMilliseconds { options.busyTimeoutMilliseconds = busyTimeoutMilliseconds }
        if let durability { options.durability = durability }
        return options
    }

    private static func createDirectories(for path: String) {
        var prefix = ""
        let components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        for (index, component) in components.enumerated() {
            prefix += (index == 0 ? "" : "/") + component
            if !prefix.isEmpty { mkdir(prefix, 0o770) }
        }
    }
}

/// An environment variable with a value that cannot be used.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var variable: String
    public var value: String
    public var expected: String

    public var description: String { "\(variable)=\"\(value)\" is not valid: expected \(expected)" }
}
