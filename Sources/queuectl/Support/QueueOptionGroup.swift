import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

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
        var parsedDurability: QueueOptions.Durability?
        if let durability {
            guard let value = QueueOptions.Durability(rawValue: durability) else {
                throw fail("--durability must be full or normal (got \"\(durability)\")", status: ExitStatus.usage)
            }
            parsedDurability = value
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

    /// Opens the existing queue for `status`, `peek` and `dead`: an admin, not a consumer (they claim nothing).
    func openAdmin() throws -> QueueAdmin {
        do {
            return try QueueAdmin(path: try existingPath(), options: try options())
        } catch let error as QueueError {
            throw fail(error)
        }
    }

    /// Runs `body` on the existing queue opened as an admin (`openAdmin`), then closes it; a `QueueError` thrown
    /// is its one-line message and exit status.
    func withAdmin<T>(_ body: (QueueAdmin) throws -> T) throws -> T {
        let admin = try openAdmin()
        defer { admin.close() }
        do {
            return try body(admin)
        } catch let error as QueueError {
            throw fail(error)
        }
    }
}

/// Runs a queue operation, turning a `QueueError` into its one-line message and exit status.
func withQueue<T>(_ body: () throws(QueueError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw fail(error)
    }
}
