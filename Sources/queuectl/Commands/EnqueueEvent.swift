import ArgumentParser
import EventQueue

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
            idempotencyKey: try properties.idempotencyKey)
        try enqueueOne(record, queue: queue)
    }
}
