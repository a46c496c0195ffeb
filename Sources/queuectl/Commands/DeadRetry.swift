import ArgumentParser
import EventQueue

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
        let admin = try queue.openAdmin()
        defer { admin.close() }
        let ids = try selection.resolve(admin)
        let report = try withQueue { () throws(QueueError) in try admin.retryDeadChecked(ids: ids) }
        writeStandardOutput("retried \(report.retried.count) dead letters\n")
        for item in report.stillInvalid {
            // Still dead: retrying would only have the next drain dead-letter it again. Fix the payload first.
            writeStandardError(
                "queuectl: warning: record \(item.id) left dead, still invalid: \(item.reason)".replacingNewlines()
                    + "\n")
        }
    }
}
