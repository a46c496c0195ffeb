import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

struct ImportLegacy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-legacy",
        abstract:
            "Import the pending entries of an old shared-defaults store (property list or JSON) in one transaction.",
        discussion: """
            Reads pending_custom_events, pending_custom_attributes and pending_user_attributes and enqueues each \
            entry for the one user named; an entry that breaks a rule becomes a dead letter with the reason, other \
            keys (app settings) are skipped. Idempotent: a second run on the same store enqueues nothing. \
            --clear-source then removes the imported entries from the store, only if no one changed it since it \
            was read (else it removes nothing and says to run again). See docs/MIGRATING.md.
            """)

    @Argument(help: "The store: an XML or binary property list, or JSON of the same shape.") var path: String
    @OptionGroup var user: IdentityOptions
    @Option(help: "The time of the imported events, ISO 8601 (default: the time of the import).") var time: String?
    @Flag(name: .customLong("time-from-mtime"), help: "Use the store's modification time as the events' time.")
    var timeFromMtime = false
    @Flag(name: .customLong("dry-run"), help: "Say what would be imported; change nothing.") var dryRun = false
    @Flag(help: "Print the summary as JSON.") var json = false
    @Flag(
        name: .customLong("clear-source"),
        help: "After the import commits, remove the imported entries from the store (atomically, only if unchanged).")
    var clearSource = false
    @OptionGroup var queue: QueueOptionGroup

    func validate() throws {
        if time != nil && timeFromMtime {
            throw ValidationError("give --time or --time-from-mtime, not both")
        }
        if dryRun && clearSource {
            throw ValidationError("--dry-run changes nothing, so it cannot --clear-source")
        }
        if let time, ISO8601.parse(time) == nil {
            throw ValidationError("--time must be ISO 8601, such as 2026-11-20T09:00:00Z (got \"\(time)\")")
        }
    }

    func run() throws {
        let identity = try user.identity()
        let store = try LegacyStore(path: path)
        var eventTime = time
        if timeFromMtime {
            let milliseconds =
                Int64(store.identity.modifiedSeconds) * 1000 + Int64(store.identity.modifiedNanoseconds / 1_000_000)
            eventTime = ISO8601.format(unixMilliseconds: milliseconds)
        }
        let entries = LegacyEntries.plan(store, user: identity, time: eventTime)
        var summary = LegacyImportSummary(store: store, dryRun: dryRun)
        summary.outcomes = try importEntries(entries)
        if clearSource {
            summary.cleared = try LegacySourceClearing.clear(store: store, outcomes: summary.outcomes)
            summary.clearRefused = summary.cleared == nil
        }
        writeStandardOutput(json ? summary.json.serialized + "\n" : summary.text)
        if summary.clearRefused {
            throw fail(
                "the store \(path) changed since it was read (an old writer is still running?): nothing was "
                    + "removed from it, and everything imported is in the queue; run the same command again (the "
                    + "import is idempotent)", status: ExitStatus.busy)
        }
    }

    /// Runs the batch; a dry run rolls it back, so its outcomes (already queued included) are the import's own.
    /// A dry run without a queue runs it on a new queue in a temporary directory, removed after: the same rule
    /// decides every entry, never a prediction of it.
    private func importEntries(_ entries: [LegacyEntry]) throws -> [LegacyImportSummary.Outcome] {
        struct DryRun: Error { var outcomes: [LegacyImportSummary.Outcome] }
        let noQueue = access(QueueEnvironment.databasePath(explicit: queue.db, createDirectory: false), F_OK) != 0
        let scratch = dryRun && noQueue ? try Self.temporaryDirectory() : nil
        defer {
            if let scratch {
                for suffix in ["", "-wal", "-shm", "-turn", "-journal"] { unlink(scratch + "/queue.db" + suffix) }
                rmdir(scratch)
            }
        }
        let writer = try withQueue { try scratch.map { try QueueWriter(path: $0 + "/queue.db") } } ?? queue.openWriter()
        defer { writer.close() }
        do {
            return try writer.batch(countingRefusal: !dryRun) { batch in
                var outcomes: [LegacyImportSummary.Outcome] = []
                for entry in entries {
                    let context = entry.label + ": "
                    var result: BatchOutcome?
                    do throws(QueueError) {
                        switch entry.plan {
                        case .record(let record): result = try batch.enqueueOrDeadLetter(record, context: context)
                        case .deadLetter(let record, let reason):
                            result = try batch.deadLetter(record, reason: context + reason)
                        case .unrecognized: result = nil
                        }
                    } catch {
                        if case .invalidRecord(let validation) = error {
                            throw fail(
                                "\(entry.label): \(validation.description); nothing was imported",
                                status: ExitStatus.invalidInput)
                        }
                        throw error
                    }
                    outcomes.append(LegacyImportSummary.Outcome(entry: entry, result: result))
                }
                if dryRun { throw DryRun(outcomes: outcomes) }
                return outcomes
            }
        } catch let dry as DryRun {
            return dry.outcomes
        } catch let error as QueueError {
            throw fail(error)
        }
    }

    /// A new directory under `$TMPDIR` (else `/tmp`), for a dry run's scratch queue.
    private static func temporaryDirectory() throws -> String {
        let directory = QueueEnvironment.variable("TMPDIR") ?? "/tmp"
        var template = Array((directory + "/queuectl-dry-run-XXXXXX").utf8CString)
        let path = template.withUnsafeMutableBufferPointer {
            $0.baseAddress.flatMap(mkdtemp).map { String(cString: $0) }
        }
        guard let path else {
            throw fail(
                "cannot create a directory for the dry run's scratch queue (set TMPDIR to a writable directory): "
                    + String(cString: strerror(errno)), status: ExitStatus.cannotCreate)
        }
        return path
    }
}
