import ArgumentParser
import EventQueue
import EventQueueCommandLine

struct Forget: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Erase users from the queue (and, with --braze-delete, at Braze, after their records).",
        discussion: """
            Removes every record of each user from the queue file (pending, in flight: not delivered again nor \
            retried; dead) and the idempotency keys remembered for them, then rebuilds the file and empties its \
            WAL so that no byte of them is left, holding the write lock at most a quarter of the busy timeout: a \
            file too large for that keeps the bytes until the daemon's upkeep can (exit 75, status: scrub owed). \
            --ndjson FILE (- for stdin): every identity in it, one a line ({"external_id":"u1"}), one scrub. Users \
            are matched by the identifier their records were queued with. --braze-delete queues each user's \
            deletion in their own stream (POST /users/delete, at most 50 users of one type a request, after every \
            request that carried their records) and asks a daemon serving the queue to launch a pass. Run it on \
            every host that may hold the user; the daemon's POST /forget?external_id=u1 forgets one user too.

            Who may: any writer may forget a user within the queue (writers can delete rows anyway). Deleting a user \
            at Braze is an operator's act: --braze-delete is for root, the daemon's user and members of the \
            \(ErasureKey.adminGroup) group (sudo usermod -aG \(ErasureKey.adminGroup) USER), who can read the erasure \
            key (\(ErasureKey.packagedPath), or $EVENTQUEUE_ERASURE_KEY, or QUEUE-erasure-key beside a queue outside \
            the package); through the socket the daemon checks the caller's credentials. Anyone else is refused \
            with exit 77 and nothing changes. The daemon sends an erasure only when its grant verifies under that key: \
            an erasure row planted with any SQLite client is dead-lettered as not authorized, never sent.

            Exit status: 0 the users are forgotten and no byte of them is left; 64 usage: an \
            unknown flag, two identities, or --ndjson with an identity flag; 65 a line of --ndjson is not one \
            identity, or it names no user; 66 the --ndjson file or the queue is missing; 73 cannot open the queue \
            file; 74 disk full or I/O error; 75 queue busy, or the scrub is owed: the records are removed, their \
            bytes may remain; 77 you may not delete users at Braze (root, the daemon's user, eventqueue-admins); 78 \
            not a queue file, corrupt, or a newer schema (never modified).
            """
    )

    @OptionGroup var identity: IdentityOptions

    @Option(help: "Forget every user in this file, one JSON identity a line (- for standard input), with one scrub.")
    var ndjson: String?

    @Flag(
        name: .customLong("braze-delete"),
        help: """
            Also delete the user at Braze (POST /users/delete), in the user's order, through the daemon's sink \
            (root, the daemon's user and \(ErasureKey.adminGroup) only).
            """)
    var brazeDelete = false

    @Flag(help: "Do not ask a daemon serving the queue to send the deletion now (it leaves at the next pass).")
    var local = false

    @Option(help: "The daemon's control socket (default: as for drain).")
    var socket: String?

    @Flag(help: "Print the report as JSON.")
    var json = false

    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let users = try self.users()
        _ = try queue.existingPath()
        let writer = try queue.openWriter()
        defer { writer.close() }
        let report = try withQueue { () throws(QueueError) in try writer.forget(users, brazeDelete: brazeDelete) }
        // A launch sends nothing of the users, so the socket needs no `SocketTrust` check.
        let launched =
            !report.erasureIDs.isEmpty && !local
            && (try? Status.servingDaemon(socket: socket, queuePath: writer.path)?.client.launch()) != nil
        writeStandardOutput(
            json
                ? JSONValue.object(ForgetReportJSON.json(report, by: .local)).serialized + "\n"
                : ForgetReportJSON.text(report, launched: launched))
        guard report.scrub.bytesGone else {
            throw fail(
                "the records are removed, but their bytes may remain in the file or its WAL (the file too large to "
                    + "rebuild within a quarter of the busy timeout, busy, or readers held old snapshots): the scrub "
                    + "is owed (status shows it) and the daemon's upkeep does it once it fits; forgetting again "
                    + "tries again", status: .busy)
        }
    }

    /// The users named by the identity flags or, with --ndjson, by the file: exactly one of the two.
    private func users() throws -> [UserIdentity] {
        guard let ndjson else { return [try identity.identity()] }
        guard try identity.identityIfGiven() == nil else {
            throw ValidationError("give --ndjson or one identity flag, not both")
        }
        let input = try NDJSONInput(path: ndjson)
        var users: [UserIdentity] = []
        while let (line, text) = try input.next() {
            guard !text.allSatisfy(\.isWhitespace) else { continue }
            guard let member = (try? JSONValue.parse(text))?.objectValue, member.count == 1,
                let user = UserIdentity(filing: member)
            else {
                throw fail(
                    "\(ndjson):\(line): not one identity (an object with one of external_id, braze_id, email, "
                        + "phone or user_alias): nothing was forgotten", status: .invalidInput)
            }
            users.append(user)
        }
        guard !users.isEmpty else { throw fail("\(ndjson) names no user", status: .invalidInput) }
        return users
    }
}
