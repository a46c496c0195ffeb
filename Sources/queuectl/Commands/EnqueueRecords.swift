import ArgumentParser
import EventQueue

struct EnqueueEvent: RecordSubcommand {
    static let configuration = CommandConfiguration(commandName: "event", abstract: "Enqueue a custom event.")

    @Argument(help: "The event name.") var name: String
    @OptionGroup var properties: PropertyOptions
    @OptionGroup var user: IdentityOptions
    @OptionGroup var queue: QueueOptionGroup

    @ParentCommand var parent: Enqueue

    func run() throws {
        let record = Record.event(
            name, user: try user.identity(), properties: try properties.object(), time: properties.time,
            idempotencyKey: try properties.idempotencyKey)
        try enqueueOne(record, queue: queue)
    }
}

struct EnqueueAttribute: RecordSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "attribute",
        abstract: "Set one custom attribute or standard profile field (email, first_name, country, ...).")

    @Argument(help: "The attribute name.") var key: String
    @Argument(help: "The value: JSON when it parses (3, true, null, [\"a\"], {\"inc\":1}), else a string.")
    var value: String
    @Option(name: .customLong("key"), parsing: .singleValue, help: idempotencyKeyHelp)
    var idempotencyKeys: [String] = []
    @OptionGroup var user: IdentityOptions
    @OptionGroup var queue: QueueOptionGroup

    @ParentCommand var parent: Enqueue

    func run() throws {
        let record = Record.attribute(
            key, commandLineValue(value), user: try user.identity(),
            idempotencyKey: try singleValue(idempotencyKeys, flag: "--key"))
        try enqueueOne(record, queue: queue)
    }
}

struct EnqueuePurchase: RecordSubcommand {
    static let configuration = CommandConfiguration(commandName: "purchase", abstract: "Enqueue a purchase.")

    @Argument(help: "The product id.") var productID: String
    @Option(help: "ISO 4217 currency code, e.g. USD.") var currency: String
    // .unconditional: `--price -1` is a value, as `--price=-1` always was; without it ArgumentParser took "-1" for a
    // flag and answered "Missing value".
    @Option(parsing: .unconditional, help: "The price, a number.") var price: String
    @Option(help: "1 to 100.") var quantity: Int = 1
    @OptionGroup var properties: PropertyOptions
    @OptionGroup var user: IdentityOptions
    @OptionGroup var queue: QueueOptionGroup

    @ParentCommand var parent: Enqueue

    func run() throws {
        // Not a number: a malformed flag value, a usage error (64) like `--prop` without `=`.
        guard let number = JSONNumber(text: price) else {
            throw ValidationError("--price must be a number (got \"\(price)\")")
        }
        let record = Record.purchase(
            productID: productID, currency: currency, price: number, quantity: quantity,
            user: try user.identity(),
            properties: try properties.object(), time: properties.time, idempotencyKey: try properties.idempotencyKey)
        try enqueueOne(record, queue: queue)
    }
}

/// `--prop KEY=VALUE`, `--properties JSON`, `--time`, `--key`: what events and purchases share.
struct PropertyOptions: ParsableArguments {
    @Option(name: .customLong("prop"), help: "A property KEY=VALUE; VALUE is JSON when it parses, else a string.")
    var props: [String] = []
    @Option(help: "All properties as one JSON object (--prop entries are added on top).")
    var properties: String?
    @Option(help: "When it happened, ISO 8601 (default: now).")
    var time: String?
    @Option(name: .customLong("key"), parsing: .singleValue, help: idempotencyKeyHelp)
    var idempotencyKeys: [String] = []

    /// The one `--key`, if given (a second is refused: `singleValue`).
    var idempotencyKey: String? { get throws { try singleValue(idempotencyKeys, flag: "--key") } }

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
            object[key] = commandLineValue(String(prop[prop.index(after: equals)...]))
        }
        return object
    }
}
