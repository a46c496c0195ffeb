import ArgumentParser
import EventQueue
import EventQueueDelivery

/// `--db` and the open options every subcommand takes.
struct QueueOptionGroup: ParsableArguments {
    @Option(name: .long, help: "The queue file (default: $EVENTQUEUE_DB, else the documented default path).")
    var db: String?

    @Option(name: .customLong("busy-timeout"), help: "Milliseconds to wait for another process's lock.")
    var busyTimeoutMilliseconds: Int?

    @Option(help: "full (default: survives power loss) or normal (faster).")
    var durability: String?

    var path: String { QueueEnvironment.databasePath(explicit: db) }

    /// `--busy-timeout` within its range (`OptionRange`): a huge value used to overflow in `BusyWait`.
    func validate() throws {
        if let busyTimeoutMilliseconds,
            let problem = OptionRange.problem(
                "--busy-timeout", busyTimeoutMilliseconds, OptionRange.busyTimeoutMilliseconds)
        {
            throw ValidationError(problem + " milliseconds")
        }
    }

    func options() throws -> QueueOptions {
        var parsedDurability: QueueOptions.Durability?
        if let durability {
            guard let value = QueueOptions.Durability(rawValue: durability) else {
                throw fail("--durability must be full or normal (got \"\(durability)\")", status: ExitStatus.usage)
            }
            parsedDurability = value
        }
        if let busyTimeoutMilliseconds, busyTimeoutMilliseconds < 0 {
            throw fail("--busy-timeout must be 0 or more milliseconds", status: ExitStatus.usage)
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
        do {
            return try QueueWriter(path: path, options: try options())
        } catch let error as QueueError {
            throw fail(error)
        }
    }

    func openConsumer() throws -> QueueConsumer {
        do {
            return try QueueConsumer(path: path, options: try options())
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
