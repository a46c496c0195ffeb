import ArgumentParser
import EventQueue

struct EnqueuePurchase: ParsableCommand {
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

    func validate() throws {
        try refuseNDJSONWithSubcommand(parent)
    }

    /// `--price` that is not a number is a malformed flag value: a usage error (64), like `--prop` without `=`.
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
            properties: try properties.object(), time: properties.time, idempotencyKey: try properties.idempotencyKey)
        try enqueueOne(record, queue: queue)
    }
}
