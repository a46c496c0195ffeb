import ArgumentParser
import EventQueue

struct EnqueueAttribute: ParsableCommand {
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

    func validate() throws {
        try refuseNDJSONWithSubcommand(parent)
    }

    func run() throws {
        let record = Record.attribute(
            key, CommandLineValue.parse(value), user: try user.identity(),
            idempotencyKey: try singleValue(idempotencyKeys, flag: "--key"))
        try enqueueOne(record, queue: queue)
    }
}
