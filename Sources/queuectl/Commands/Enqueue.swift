import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

struct Enqueue: ParsableCommand {
    static let configuration = CommandConfiguration(
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
        try NDJSONEnqueue.check(input, deadLetterInvalid: deadLetterInvalid)
        let writer = try queue.openWriter()
        defer { writer.close() }
        let result: NDJSONEnqueue.Result
        do {
            result = try NDJSONEnqueue.run(
                input: input, writer: writer, deadLetterInvalid: deadLetterInvalid,
                recordsPerTransaction: oneTransaction ? Int.max : NDJSONEnqueue.recordsPerTransaction)
        } catch let error as QueueError {
            throw fail(error)
        }
        result.print()
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

/// Refuses `enqueue --ndjson FILE event ...`: the subcommand would run and the file be ignored.
func refuseNDJSONWithSubcommand(_ parent: Enqueue) throws {
    if parent.ndjson != nil || parent.deadLetterInvalid || parent.oneTransaction {
        throw ValidationError(
            "--ndjson (and --dead-letter-invalid) cannot be combined with event, attribute or purchase: "
                + "enqueue either a file or one record (so cannot --one-transaction)")
    }
}

/// `--external-id`, `--braze-id`, `--email`, `--phone`, or an alias (`--alias-name` with `--alias-label`, or
/// `--alias NAME:LABEL`): exactly one.
///
/// Why `--alias` refuses a second colon: `urn:x:1:crm` splits as well at any of its colons, and a wrong split
/// sends the record to another Braze user. With exactly one colon there is one reading; anything else must be
/// spelled with the two separate options, which hold any text.
struct IdentityOptions: ParsableArguments {
    @Option(name: .customLong("external-id"), help: "The user's external id.")
    var externalID: String?
    @Option(name: .customLong("braze-id"), help: "The user's Braze id.")
    var brazeID: String?
    @Option(help: "The user's email (as the identifier).")
    var email: String?
    @Option(help: "The user's phone number (as the identifier).")
    var phone: String?
    @Option(
        help: """
            A user alias as NAME:LABEL, with exactly one colon (a name or label holding a colon: use \
            --alias-name and --alias-label).
            """)
    var alias: String?
    @Option(name: .customLong("alias-name"), help: "A user alias's name (with --alias-label); any text.")
    var aliasName: String?
    @Option(name: .customLong("alias-label"), help: "A user alias's label (with --alias-name); any text.")
    var aliasLabel: String?

    func validate() throws {
        _ = try identity()
    }

    func identity() throws -> UserIdentity {
        var found: [UserIdentity] = []
        if let externalID { found.append(.externalID(externalID)) }
        if let brazeID { found.append(.brazeID(brazeID)) }
        if let email { found.append(.email(email)) }
        if let phone { found.append(.phone(phone)) }
        if let alias { found.append(try Self.splitAlias(alias)) }
        switch (aliasName, aliasLabel) {
        case (let name?, let label?): found.append(.alias(name: name, label: label))
        case (nil, nil): break
        default:
            throw ValidationError("--alias-name and --alias-label go together: give both")
        }
        guard found.count == 1, let identity = found.first else {
            throw ValidationError(
                "name exactly one user with --external-id, --braze-id, --email, --phone or --alias (got "
                    + "\(found.count))")
        }
        return identity
    }

    /// `NAME:LABEL` with exactly one colon, neither side empty; anything else is refused, never guessed.
    static func splitAlias(_ alias: String) throws -> UserIdentity {
        guard let colon = alias.firstIndex(of: ":"), colon != alias.startIndex else {
            throw ValidationError("--alias must be NAME:LABEL (got \"\(alias)\")")
        }
        let label = alias[alias.index(after: colon)...]
        guard !label.contains(":") else {
            throw ValidationError(
                "--alias \"\(alias)\" is ambiguous: it has more than one colon, so the name and the label could be "
                    + "split at any of them; give them apart with --alias-name NAME --alias-label LABEL")
        }
        return .alias(name: String(alias[..<colon]), label: String(label))
    }
}

/// `--key`'s help (events, attributes and purchases): keys are per user.
let idempotencyKeyHelp = ArgumentHelp(
    """
    An idempotency key, per user: the same key again for the same user writes nothing and prints the first id \
    (while the record is queued or dead, and for 7 days after delivery); for another user it is another record.
    """)

/// `--prop KEY=VALUE`, `--properties JSON`, `--time`, `--key`: what events and purchases share.
struct PropertyOptions: ParsableArguments {
    @Option(name: .customLong("prop"), help: "A property KEY=VALUE; VALUE is JSON when it parses, else a string.")
    var props: [String] = []
    @Option(help: "All properties as one JSON object (--prop entries are added on top).")
    var properties: String?
    @Option(help: "When it happened, ISO 8601 (default: now).")
    var time: String?
    @Option(name: .customLong("key"), help: idempotencyKeyHelp)
    var idempotencyKey: String?

    /// A malformed flag value is a usage error (64) before anything runs; a record that breaks Braze's rules
    /// is 65, once it is built.
    func validate() throws {
        _ = try object()
    }

    func object() throws -> JSONObject {
        var object = JSONObject()
        if let properties {
            let parsed: JSONValue
            do {
                parsed = try JSONValue.parse(properties)
            } catch {
                throw ValidationError("--properties must be a JSON object: \(error)")
            }
            guard let parsedObject = parsed.objectValue else {
                throw ValidationError("--properties must be a JSON object")
            }
            object = parsedObject
        }
        var seen: Set<String> = []
        for prop in props {
            guard let equals = prop.firstIndex(of: "="), equals != prop.startIndex else {
                throw ValidationError("--prop must be KEY=VALUE (got \"\(prop)\")")
            }
            let key = String(prop[..<equals])
            guard seen.insert(key).inserted else {
                throw ValidationError("--prop \(key) is given more than once: give each property once")
            }
            object[key] = CommandLineValue.parse(String(prop[prop.index(after: equals)...]))
        }
        return object
    }
}

/// A command-line value: JSON when it is valid JSON (`3`, `true`, `null`, `["a"]`, `{"inc":1}`), otherwise the
/// text itself as a string, so `--prop song=Yesterday` needs no quoting.
enum CommandLineValue {
    static func parse(_ text: String) -> JSONValue {
        (try? JSONValue.parse(text)) ?? .string(text)
    }
}

/// Checks the record before the queue is opened: a refused record (65) creates no queue file.
func enqueueOne(_ record: Record, queue: QueueOptionGroup) throws {
    try withQueue { () throws(QueueError) in try QueueBatch.check(record, orDeadLetter: false) }
    let writer = try queue.openWriter()
    defer { writer.close() }
    let id = try withQueue { () throws(QueueError) in try writer.enqueue(record) }
    writeStandardOutput("\(id)\n")
}

struct EnqueueEvent: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "event", abstract: "Enqueue a custom event.")

    @Argument(help: "The event name.") var name: String
    @OptionGroup var properties: PropertyOptions
    @OptionGroup var user: IdentityOptions
    @OptionGroup var queue: QueueOptionGroup

    @ParentCommand var parent: Enqueue

    func validate() throws {
        try refuseNDJSONWithSubcommand(parent)
    }

    func run() throws {
        let record = Record.event(
            name, user: try user.identity(), properties: try properties.object(), time: properties.time,
            idempotencyKey: properties.idempotencyKey)
        try enqueueOne(record, queue: queue)
    }
}

struct EnqueueAttribute: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribute",
        abstract: "Set one custom attribute or standard profile field (email, first_name, country, ...).")

    @Argument(help: "The attribute name.") var key: String
    @Argument(help: "The value: JSON when it parses (3, true, null, [\"a\"], {\"inc\":1}), else a string.")
    var value: String
    @Option(name: .customLong("key"), help: idempotencyKeyHelp) var idempotencyKey: String?
    @OptionGroup var user: IdentityOptions
    @OptionGroup var queue: QueueOptionGroup

    @ParentCommand var parent: Enqueue

    func validate() throws {
        try refuseNDJSONWithSubcommand(parent)
    }

    func run() throws {
        let record = Record.attribute(
            key, CommandLineValue.parse(value), user: try user.identity(), idempotencyKey: idempotencyKey)
        try enqueueOne(record, queue: queue)
    }
}

struct EnqueuePurchase: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "purchase", abstract: "Enqueue a purchase.")

    @Argument(help: "The product id.") var productID: String
    @Option(help: "ISO 4217 currency code, e.g. USD.") var currency: String
    @Option(help: "The price, a number.") var price: String
    @Option(help: "1 to 100 (default 1).") var quantity: Int = 1
    @OptionGroup var properties: PropertyOptions
    @OptionGroup var user: IdentityOptions
    @OptionGroup var queue: QueueOptionGroup

    @ParentCommand var parent: Enqueue

    /// `--price` that is not a number is a malformed flag value: a usage error (64), like `--prop` without `=`.
    func validate() throws {
        try refuseNDJSONWithSubcommand(parent)
        _ = try Self.number(price)
    }

    static func number(_ price: String) throws -> JSONNumber {
        guard let number = JSONNumber(text: price) else {
            throw ValidationError("--price must be a number (got \"\(price)\")")
        }
        return number
    }

    func run() throws {
        let record = Record.purchase(
            productID: productID, currency: currency, price: try Self.number(price), quantity: quantity,
            user: try user.identity(),
            properties: try properties.object(), time: properties.time, idempotencyKey: properties.idempotencyKey)
        try enqueueOne(record, queue: queue)
    }
}
