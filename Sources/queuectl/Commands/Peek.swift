import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

struct Peek: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peek",
        abstract: "Show the next records to be delivered, without claiming them.")

    @Option(help: "How many records.") var limit: Int = 10
    @Flag(help: "Print a JSON array.") var json = false
    @OptionGroup var queue: QueueOptionGroup

    func validate() throws {
        guard limit >= 0 else { throw ValidationError("--limit must be 0 or more") }
    }

    func run() throws {
        let records = try queue.withAdmin { try $0.peek(limit: limit) }
        printRecords(records, json: json, none: "no records pending or leased")
    }
}

/// The records, one a line (or a JSON array); none in text mode is said on stderr (`none`), so that stdout
/// stays one line per record.
func printRecords(_ records: [QueuedRecord], json: Bool, none: String) {
    if json {
        writeStandardOutput(JSONValue.array(records.map(recordJSON)).serialized + "\n")
        return
    }
    if records.isEmpty { writeStandardError("queuectl: \(none)\n") }
    var text = ""
    for record in records {
        // An erasure shows as one, with its identifier type: what goes out is a deletion, not this payload.
        let kind = record.erasure.map { "erasure(\($0.type.rawValue))" } ?? record.kind.rawValue
        text += "\(record.id)\t\(kind)\t\(record.state.rawValue)\tattempts=\(record.attempts)\t"
        // The payload and last_error were written by other users or came from the sink: escaped, so no control
        // sequence reaches the terminal.
        text += ISO8601.format(unixMilliseconds: record.createdAtMilliseconds) + "\t"
        text += ExternalText.escaped(record.payload)
        if let error = record.lastError { text += "\tlast_error=" + error.replacingNewlines() }
        text += "\n"
    }
    writeStandardOutput(text)
}

/// A record's `--json` shape (`peek`, `dead list`), built with the queue's own JSON model.
func recordJSON(_ record: QueuedRecord) -> JSONValue {
    var object: JSONObject = [
        "id": ReportJSON.number(record.id),
        "type": .string(record.kind.rawValue),
        "state": .string(record.state.rawValue),
        "attempts": ReportJSON.number(record.attempts),
        "created_at": ReportJSON.time(record.createdAtMilliseconds),
        "next_attempt_at": ReportJSON.time(
            record.nextAttemptAtMilliseconds > 0 ? record.nextAttemptAtMilliseconds : nil),
        "last_error": record.lastError.map(JSONValue.string) ?? .null,
    ]
    if record.state == .dead { object["dead_at"] = ReportJSON.time(record.deadAtMilliseconds) }
    if let erasure = record.erasure {
        object["type"] = "erasure"
        object["identifier_type"] = .string(erasure.type.rawValue)
    }
    object["object"] = (try? JSONValue.parse(record.payload)) ?? .string(record.payload)
    return .object(object)
}

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
