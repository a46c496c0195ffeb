import ArgumentParser
import EventQueue
import EventQueueCommandLine

struct Dead: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead",
        abstract: "Dead letters: records the sink refused or that ran out of attempts. Kept until purged.",
        subcommands: [DeadList.self, DeadRetry.self, DeadPurge.self]
    )
}

struct DeadList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List dead letters.")
    @Option(help: "At most this many.") var limit: Int?
    @Flag(help: "Print a JSON array.") var json = false
    @OptionGroup var queue: QueueOptionGroup

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more (got \(limit))") }
    }

    func run() throws {
        let records = try queue.withAdmin { try $0.deadLetters(limit: limit ?? Int(Int32.max)) }
        printRecords(records, json: json, none: "no dead letters")
    }
}

struct DeadRetry: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: "Make dead letters pending again, with a fresh attempt budget.",
        discussion: """
            A dead letter whose payload still breaks Braze's rules (one set aside at enqueue or import and not yet \
            fixed) stays dead, with a warning on stderr naming the rule.
            """)
    @OptionGroup var selection: DeadSelection
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let report = try queue.withAdmin { admin in try admin.retryDeadChecked(ids: try selection.resolve(admin)) }
        writeStandardOutput("retried \(report.retried.count) dead letters\n")
        for item in report.stillInvalid {
            // Still dead: retrying would only have the next drain dead-letter it again. Fix the payload first.
            writeStandardError(
                "queuectl: warning: record \(item.id) left dead, still invalid: \(item.reason)".replacingNewlines()
                    + "\n")
        }
    }
}

struct DeadPurge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge", abstract: "Delete dead letters for good.")
    @OptionGroup var selection: DeadSelection
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let changed = try queue.withAdmin { admin in try admin.purgeDead(ids: try selection.resolve(admin)) }
        writeStandardOutput("purged \(changed.count) dead letters\n")
    }
}

/// `--all` or a list of ids, never both, never neither.
struct DeadSelection: ParsableArguments {
    @Flag(help: "Every dead letter.") var all = false
    @Argument(help: "Record ids.") var ids: [Int64] = []

    func validate() throws {
        guard all != !ids.isEmpty else { throw ValidationError("give either --all or one or more record ids") }
    }

    /// The ids to act on (`nil` = all), after checking every named id is a dead letter, so a typo changes nothing.
    func resolve(_ admin: QueueAdmin) throws -> [Int64]? {
        if all { return nil }
        let dead = Set(try admin.deadLetters().map(\.id))
        let missing = ids.filter { !dead.contains($0) }
        guard missing.isEmpty else {
            throw fail(
                "not dead letters: \(missing.map(String.init).joined(separator: ", ")); nothing was changed",
                status: ExitStatus.problemsFound)
        }
        return ids
    }
}
