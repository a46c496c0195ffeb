import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

struct Enqueue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enqueue",
        abstract:
            "Append records: one event, attribute or purchase, or a whole NDJSON file (checked in full first).",
        discussion: """
            NDJSON: one Braze object per line plus "type" (event, attribute or purchase) and an optional \
            "idempotency_key", e.g. {"type":"event","external_id":"u1","name":"song_liked"}. \
            Prints the id of each record, one per line (with --dead-letter-invalid, dead letters too, the first 20 also \
            named on stderr). The input is read as it is enqueued, so its size does not matter. Every line is \
            checked before any is written (a refused line enqueues nothing); then the records are committed \
            1,000 at a time, so other writers and the daemon never wait long (a write that fails half way \
            leaves the first chunks queued and says which lines; --one-transaction commits all or nothing).
            """,
        subcommands: [EnqueueEvent.self, EnqueueAttribute.self, EnqueuePurchase.self]
    )

    @Option(help: "Read NDJSON records from PATH (- for stdin), check them all, then enqueue them.")
    var ndjson: String?

    @Flag(
        name: .customLong("one-transaction"),
        help: """
            With --ndjson: commit the whole input in one transaction (all or nothing even if the write fails \
            half way), holding the queue's write lock for as long as that takes: every other writer and the \
            daemon wait meanwhile (a minute-long file makes them give up after their busy timeout).
            """)
    var oneTransaction = false

    @Flag(
        name: .customLong("dead-letter-invalid"),
        help: """
            With --ndjson: keep a line that breaks a rule as a dead letter with the reason (and its line number) \
            instead of refusing the whole input. A line that is not a record naming a user still refuses it.
            """)
    var deadLetterInvalid = false

    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        guard let ndjson else {
            throw fail(
                "say what to enqueue: `queuectl enqueue event|attribute|purchase ...` or "
                    + "`queuectl enqueue --ndjson PATH`", status: ExitStatus.usage)
        }
        let input = try NDJSONInput(path: ndjson)
        // Every line is checked before the queue is opened: refused input creates no queue file.
        let checked = try NDJSONEnqueue.check(input, deadLetterInvalid: deadLetterInvalid)
        let writer = try queue.openWriter()
        defer { writer.close() }
        try withQueue {
            try NDJSONEnqueue.run(
                input: input, checked: checked, writer: writer, deadLetterInvalid: deadLetterInvalid,
                recordsPerTransaction: oneTransaction ? Int.max : NDJSONEnqueue.recordsPerTransaction)
        }.print()
    }
}

/// After a usage error: `queuectl enqueue bogus x --external-id u1` fails on the first option after the unknown
/// kind ("Unknown option '--external-id'"); name the kind instead. Only consulted when parsing already failed.
func unknownRecordKindMessage(_ arguments: [String]) -> String? {
    guard let enqueue = arguments.firstIndex(of: "enqueue"), enqueue + 1 < arguments.count else { return nil }
    let kind = arguments[enqueue + 1]
    guard !kind.hasPrefix("-"), !["event", "attribute", "purchase", "help"].contains(kind) else { return nil }
    return "unknown record kind \"\(kind)\": give event, attribute or purchase, or --ndjson PATH"
}

/// `enqueue event`, `attribute` and `purchase`.
protocol RecordSubcommand: ParsableCommand {
    var parent: Enqueue { get }
}

extension RecordSubcommand {
    /// Refuses `enqueue --ndjson FILE event ...`: the subcommand would run and the file be ignored.
    func validate() throws {
        if parent.ndjson != nil || parent.deadLetterInvalid || parent.oneTransaction {
            throw ValidationError(
                "--ndjson (and --dead-letter-invalid) cannot be combined with event, attribute or purchase: "
                    + "enqueue either a file or one record (so cannot --one-transaction)")
        }
    }
}

/// `--key`'s help (events, attributes and purchases): keys are per user.
let idempotencyKeyHelp = ArgumentHelp(
    """
    An idempotency key, per user: the same key again for the same user writes nothing and prints the first id \
    (while the record is queued or dead, and for 7 days after delivery); for another user it is another record.
    """)

/// A command-line value: JSON when it is valid JSON (`3`, `true`, `null`, `["a"]`, `{"inc":1}`), otherwise the
/// text itself as a string, so `--prop song=Yesterday` needs no quoting.
func commandLineValue(_ text: String) -> JSONValue {
    (try? JSONValue.parse(text)) ?? .string(text)
}

/// Checks the record before the queue is opened: a refused record (65) creates no queue file.
func enqueueOne(_ record: Record, queue: QueueOptionGroup) throws {
    let encoded = try withQueue { try QueueWriter.encode(record, now: WallClock.nowMilliseconds()) }
    let writer = try queue.openWriter()
    defer { writer.close() }
    let id = try withQueue { try writer.enqueue(encoded) }
    writeStandardOutput("\(id)\n")
}
