import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `--db` and the open options every subcommand takes.
struct QueueOptionGroup: ParsableArguments {
    @Option(name: .long, help: "The queue file (default: $EVENTQUEUE_DB, else the documented default path).")
    var db: String?

    @Option(name: .customLong("busy-timeout"), help: "Milliseconds to wait for another process's lock.")
    var busyTimeoutMilliseconds: Int?

    @Option(help: "full (default: survives power loss) or normal (faster).")
    var durability: String?

    /// `--busy-timeout` within its range (`OptionRange`): a huge value used to overflow in the busy handler (`WriteGate`).
    func validate() throws {
        if let busyTimeoutMilliseconds,
            let problem = OptionRange.problem(
                "--busy-timeout", busyTimeoutMilliseconds, OptionRange.busyTimeoutMilliseconds)
        {
            throw ValidationError(problem + " milliseconds")
        }
    }

    /// The queue path for a command that only reads or administers an existing queue: exit 66 ("no queue at
    /// PATH") when there is none, so that a mistyped `--db` never creates an empty queue (or its directory).
    func existingPath() throws -> String {
        let path = QueueEnvironment.databasePath(explicit: db, createDirectory: false)
        // Only a missing file (or directory) is "no queue": a directory this user may not enter is the open's
        // error to explain (73, naming the permissions).
        guard access(path, F_OK) == 0 || (errno != ENOENT && errno != ENOTDIR) else {
            throw fail(
                "no queue at \(path): check --db or $EVENTQUEUE_DB (enqueueing a record creates a queue)",
                status: ExitStatus.inputMissing)
        }
        return path
    }

    func options() throws -> QueueOptions {
        let parsedDurability = try durability.map { text in
            guard let value = QueueOptions.Durability(rawValue: text) else {
                throw fail("--durability must be full or normal (got \"\(text)\")", status: ExitStatus.usage)
            }
            return value
        }
        do {
            return try QueueEnvironment.options(
                busyTimeoutMilliseconds: busyTimeoutMilliseconds, durability: parsedDurability)
        } catch {
            throw fail(error.description, status: ExitStatus.usage)
        }
    }

    /// A writer opened like the library's: O(1) in the size of the queue, so a script that enqueues one record per
    /// call pays the same at 10 records pending as at 10 million. Damage is found on the pages a write touches;
    /// the whole-file check is `queuectl check` and `queued`'s start.
    func openWriter() throws -> QueueWriter {
        let path = QueueEnvironment.databasePath(explicit: db)
        let existed = access(path, F_OK) == 0
        do {
            let writer = try QueueWriter(path: path, options: try options())
            if !existed { UnservedQueueNotice.queueCreated(at: path) }
            return writer
        } catch let error as QueueError {
            throw fail(error)
        }
    }

    /// Runs `body` on the existing queue opened as an admin (not a consumer: `status`, `peek` and `dead` claim
    /// nothing), then closes it; a `QueueError` thrown is its one-line message and exit status.
    func withAdmin<T>(_ body: (QueueAdmin) throws -> T) throws -> T {
        let (path, options) = (try existingPath(), try options())
        return try withQueue {
            let admin = try QueueAdmin(path: path, options: options)
            defer { admin.close() }
            return try body(admin)
        }
    }
}

/// Runs a queue operation, turning a `QueueError` into its one-line message and exit status (other errors pass).
func withQueue<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as QueueError {
        throw fail(error)
    }
}

/// Writes a one-line error to stderr and returns the exit code (`ExitStatus`'s table) to throw.
func fail(_ message: String, status: ExitStatus) -> ExitCode {
    writeStandardError("queuectl: error: " + message.replacingNewlines() + "\n")
    return ExitCode(status.rawValue)
}

/// A queue error, with its status from `ExitStatus(QueueError)`.
func fail(_ error: QueueError) -> ExitCode {
    fail(error.description, status: ExitStatus(error))
}

extension String {
    /// Errors are one line: embedded newlines would break log scraping. Every other control character is
    /// escaped too (`\x1B`): messages carry text from outside (a sink's answer, a row another writer stored),
    /// which must not rewrite the terminal.
    func replacingNewlines() -> String {
        ExternalText.escaped(self, newlinesAsSpace: true)
    }
}

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
