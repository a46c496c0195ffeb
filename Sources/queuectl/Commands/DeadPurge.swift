import ArgumentParser
import EventQueue

struct DeadPurge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge", abstract: "Delete dead letters for good.")
    @OptionGroup var selection: DeadSelection
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let admin = try queue.openAdmin()
        defer { admin.close() }
        let ids = try selection.resolve(admin)
        let changed = try withQueue { () throws(QueueError) in try admin.purgeDead(ids: ids) }
        writeStandardOutput("purged \(changed.count) dead letters\n")
    }
}
