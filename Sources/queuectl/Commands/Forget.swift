import ArgumentParser
import EventQueue
import EventQueueCommandLine
import EventQueueDelivery

#if canImport(Glibc)
    import Glibc
#endif

struct Forget: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Erase one user from the queue (and, with --braze-delete, at Braze, after their records).",
        discussion: """
            Removes every record of the user from the queue file in one transaction: pending, in flight (not \
            delivered again, and not retried if its request fails) and dead, and the idempotency keys the file \
            remembers for them; then rebuilds the file and empties its WAL, so that no byte of them is left in \
            either. The user is matched as records are filed (by the identifier they were queued with): a user \
            known by several identifiers is forgotten once per identifier. With --braze-delete, a deletion is \
            queued in the user's own stream: Braze's POST /users/delete for that user is sent after every request \
            that carried a record of theirs has been answered, and before any record of theirs enqueued later. \
            When a daemon serves the queue (its control socket, as for drain, answers for this file), the daemon \
            forgets; otherwise (or with --local) this process does. Run it on every host that may hold the user.

            Who may: any writer may forget a user within the queue (writers can delete rows anyway). Deleting a user \
            at Braze is an operator's act: --braze-delete is for root, the daemon's user and members of the \
            \(ErasureKey.adminGroup) group (sudo usermod -aG \(ErasureKey.adminGroup) USER), who can read the erasure \
            key (\(ErasureKey.packagedPath), or $EVENTQUEUE_ERASURE_KEY, or QUEUE-erasure-key beside a queue outside \
            the package); through the socket the daemon checks the caller's credentials. Anyone else is refused \
            with exit 77 and nothing changes. The daemon sends an erasure only when its grant verifies under that key: \
            an erasure row planted with any SQLite client is dead-lettered as not authorized, never sent.

            """
                + ExitStatus.helpText(
                    listing: [
                        .success, .usage, .invalidInput, .inputMissing, .busy, .refused, .badQueueFileOrConfiguration,
                    ])
    )

    @OptionGroup var identity: IdentityOptions

    @Flag(
        name: .customLong("braze-delete"),
        help: """
            Also delete the user at Braze (POST /users/delete), in the user's order, through the daemon's sink \
            (root, the daemon's user and \(ErasureKey.adminGroup) only).
            """)
    var brazeDelete = false

    @Flag(help: "Forget in this process even when a daemon serves the queue.")
    var local = false

    @Option(help: "The daemon's control socket (default: as for drain).")
    var socket: String?

    @Flag(help: "Print the report as JSON.")
    var json = false

    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let user = try identity.identity()
        let request = ForgetRequest(user: user, brazeDelete: brazeDelete)
        let path = try queue.existingPath()
        var report: ForgetReport?
        var forgetter = ForgetReportJSON.Forgetter.daemon
        if !local {
            report = try RemoteForget(socket: socket, queuePath: path).forget(request)
        }
        if report == nil {
            forgetter = .local
            let admin = try queue.openAdmin()
            defer { admin.close() }
            report = try withQueue { () throws(QueueError) in try admin.forget(user, brazeDelete: brazeDelete) }
        }
        guard let report else { return }
        writeStandardOutput(
            json
                ? JSONValue.object(ForgetReportJSON.json(report, by: forgetter)).serialized + "\n"
                : ForgetReportJSON.text(report, by: forgetter))
        guard report.scrub.bytesGone else {
            throw fail(
                "the records are removed, but their bytes may remain in the file or its WAL (busy, or readers held old "
                    + "snapshots); run the same forget again to scrub them", status: .busy)
        }
    }
}
