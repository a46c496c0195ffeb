import ArgumentParser
import EventQueue

struct DeadList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List dead letters.")
    @Option(help: "At most this many.") var limit: Int?
    @Flag(help: "Print a JSON array.") var json = false
    @OptionGroup var queue: QueueOptionGroup

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more (got \(limit))") }
    }

    func run() throws {
        let admin = try queue.openAdmin()
        defer { admin.close() }
        let limit = self.limit ?? Int(Int32.max)
        printRecords(
            try withQueue { () throws(QueueError) in try admin.deadLetters(limit: limit) }, json: json,
            none: "no dead letters")
    }
}
