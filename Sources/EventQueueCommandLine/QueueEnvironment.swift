import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

/// Where the queue file is and how to open it when the command line does not say: the environment variables
/// and defaults shared by `queuectl` and the daemon, so both always find the same file (`databasePath`,
/// `socketPath`: the order `resolve` follows), and `EVENTQUEUE_BUSY_TIMEOUT_MS`, `EVENTQUEUE_DURABILITY` and
/// `EVENTQUEUE_MIN_FREE_BYTES` (`options`).
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

    /// Where the control socket is, as both tools' `--help` says it: the order `socketPath` follows.
    public static let socketHelp = """
        The control socket is --socket, else $EVENTQUEUE_SOCKET, else $RUNTIME_DIRECTORY/control.sock, else \
        EVENTQUEUE_SOCKET in /etc/eventqueue/eventqueue.conf, else /run/eventqueue/control.sock for root, else \
        ${XDG_RUNTIME_DIR:-/tmp/eventqueue-$UID}/eventqueue/control.sock.
        """

    /// The queue path, in `databaseHelp`'s order. `createDirectory: false` is for commands that only inspect a
    /// queue: they must never create anything.
    public static func databasePath(explicit: String?, createDirectory: Bool = true) -> String {
        resolve(
            explicit ?? variable("EVENTQUEUE_DB"), "queue.db", systemd: "STATE_DIRECTORY",
            installed: SystemConfiguration.load()?.databasePath, root: "/var/lib/eventqueue",
            user: variable("XDG_STATE_HOME") ?? (variable("HOME") ?? ".") + "/.local/state",
            createDirectory: createDirectory)
    }

    /// The control socket's path, in `socketHelp`'s order.
    public static func socketPath(explicit: String?, createDirectory: Bool = true) -> String {
        resolve(
            explicit ?? variable("EVENTQUEUE_SOCKET"), "control.sock", systemd: "RUNTIME_DIRECTORY",
            installed: SystemConfiguration.load()?.socketPath, root: "/run/eventqueue",
            user: variable("XDG_RUNTIME_DIR") ?? "/tmp/eventqueue-\(getuid())", createDirectory: createDirectory)
    }

    /// The one lookup of both paths: `chosen` (the flag, else the environment variable), else `name` in systemd's
    /// directory for the unit (`$systemd` may list several, separated by colons; the first is ours), else the system
    /// installation's path, else `name` under `root` for root, else under `user`'s `eventqueue/`. Only a default's
    /// directory is created (nobody chose it by hand; an explicit path's must exist), and never the system
    /// installation's: the package's tmpfiles.d entry owns it.
    private static func resolve(
        _ chosen: String?, _ name: String, systemd: String, installed: @autoclosure () -> String?, root: String,
        user: @autoclosure () -> String, createDirectory: Bool
    ) -> String {
        if let chosen { return chosen }
        let installed = installed()
        let path: String
        if let directories = variable(systemd) {
            path = (directories.split(separator: ":").first.map(String.init) ?? directories) + "/" + name
        } else {
            path = installed ?? (getuid() == 0 ? root : user() + "/eventqueue") + "/" + name
        }
        if createDirectory, path != installed { createDirectories(for: path) }
        return path
    }

    /// Queue options from the environment, with command-line overrides applied on top.
    public static func options(
        busyTimeoutMilliseconds: Int? = nil, durability: QueueOptions.Durability? = nil
    ) throws(ConfigurationError) -> QueueOptions {
        var options = QueueOptions()
        let busyTimeouts = OptionRange.busyTimeoutMilliseconds, freeBytes = OptionRange.minimumFreeBytes
        func value<T>(_ name: String, _ expected: String, _ parse: (String) -> T?) throws(ConfigurationError) -> T? {
            try ConfigurationError.parse(name, variable(name), expected: expected, parse)
        }
        options.busyTimeoutMilliseconds =
            try value("EVENTQUEUE_BUSY_TIMEOUT_MS", "milliseconds, 0 to \(busyTimeouts.upperBound)") {
                Int($0).flatMap(busyTimeouts.ifContains)
            } ?? options.busyTimeoutMilliseconds
        options.durability =
            try value("EVENTQUEUE_DURABILITY", "full or normal", QueueOptions.Durability.init(rawValue:))
            ?? options.durability
        options.minimumFreeBytes =
            try value("EVENTQUEUE_MIN_FREE_BYTES", "bytes, 0 to \(freeBytes.upperBound)") {
                Int64($0).flatMap(freeBytes.ifContains)
            } ?? options.minimumFreeBytes
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

    /// `text`, the value of `variable` (`nil`: not set), as `parse` reads it; one it cannot read is this error.
    static func parse<T>(
        _ variable: String, _ text: String?, expected: String, _ parse: (String) -> T?
    ) throws(ConfigurationError) -> T? {
        guard let text else { return nil }
        guard let value = parse(text) else {
            throw ConfigurationError(variable: variable, value: text, expected: expected)
        }
        return value
    }
}

extension ClosedRange {
    /// `value` when it is in the range, else `nil`.
    func ifContains(_ value: Bound) -> Bound? { contains(value) ? value : nil }
}
