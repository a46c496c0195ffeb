import ArgumentParser
import EventQueue
import EventQueueDelivery
import Logging

struct Drain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Ask the queued daemon to drain (or, with --local, deliver in this process).",
        discussion: """
            Without --local the launch goes to the daemon's control socket: --socket, else $EVENTQUEUE_SOCKET, \
            else $RUNTIME_DIRECTORY/control.sock, else EVENTQUEUE_SOCKET in /etc/eventqueue/eventqueue.conf, else \
            /run/eventqueue/control.sock for root, else \
            ${XDG_RUNTIME_DIR:-/tmp/eventqueue-$UID}/eventqueue/control.sock. Without --wait it exits 0 once the \
            daemon accepted the launch; with --wait it shows progress on stderr and the pass summary on stdout.
            Exit status (--local, or --wait): 0 all delivered; 10 some records went dead in this pass; 11 records \
            remain (waiting for a retry, or the sink is unavailable); 12 the sink is misconfigured (nothing was \
            lost); 13 another drain pass holds the queue's drain lock. 69 no daemon listens on the socket; \
            77 the daemon refused this user, or the socket is not trusted (its directory, file or listener \
            belongs to someone other than root, you, or the queue file's owner).
            """
    )

    @Flag(help: "Drain in this process instead of asking the daemon.")
    var local = false

    @Option(help: "The daemon's control socket (default: $EVENTQUEUE_SOCKET, else the default path below).")
    var socket: String?

    @Flag(help: "Wait for the daemon's pass: progress to stderr, the summary to stdout, its result as exit status.")
    var wait = false

    @Option(help: "Where to deliver: jsonl:PATH (jsonl:- for stdout) or null.")
    var sink: String = "jsonl:-"

    @Option(name: .customLong("batch-size"), help: "Records per batch.")
    var batchSize: Int = 100

    @Option(name: .customLong("lease-seconds"), help: "Lease length; renewed while a delivery is in flight.")
    var leaseSeconds: Int = 60

    @Option(name: .customLong("max-attempts"), help: "Failed attempts before a record is dead-lettered.")
    var maxAttempts: Int = 10

    @Option(
        name: .customLong("max-in-flight"),
        help: "With --local: batches delivered at once (capped by the sink; jsonl and null take one at a time).")
    var maxInFlight: Int = DrainOptions.defaultMaxInFlight

    @Flag(help: "Print the summary as JSON.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log each batch to stderr.")
    var verbose = false

    @OptionGroup var queue: QueueOptionGroup

    /// Every numeric option within its range (`OptionRange`): exit 64 with the range, never a trap.
    func validate() throws {
        let problems = [
            OptionRange.problem("--batch-size", batchSize, OptionRange.batchSize),
            OptionRange.problem("--lease-seconds", leaseSeconds, OptionRange.leaseSeconds),
            OptionRange.problem("--max-attempts", maxAttempts, OptionRange.maxAttempts),
            OptionRange.problem("--max-in-flight", maxInFlight, OptionRange.maxInFlight),
        ]
        if let problem = problems.compactMap({ $0 }).first { throw ValidationError(problem) }
    }

    func run() async throws {
        if local, leaseSeconds > OptionRange.longestLeaseSeconds {
            writeStandardError(
                "queuectl: note: --lease-seconds \(leaseSeconds) is above the \(OptionRange.longestLeaseSeconds) s "
                    + "a lease can last; using \(OptionRange.longestLeaseSeconds)\n")
        }
        guard local else {
            let queuePath =
                queue.db ?? QueueEnvironment.variable("EVENTQUEUE_DB") ?? QueueEnvironment.defaultDatabasePath()
            try await RemoteDrain(
                socketPath: QueueEnvironment.socketPath(explicit: socket), json: json, queuePath: queuePath
            ).run(wait: wait)
            return
        }
        guard batchSize >= 1, leaseSeconds >= 1, maxAttempts >= 1, maxInFlight >= 1 else {
            throw fail(
                "--batch-size, --lease-seconds, --max-attempts and --max-in-flight must be at least 1",
                status: ExitStatus.usage)
        }
        let spec: SinkSpec
        do {
            spec = try SinkSpec(parsing: sink)
        } catch {
            throw fail(error.description, status: ExitStatus.usage)
        }
        let path = try queue.existingPath()
        let destination: any Sink
        do {
            destination = try spec.makeSink()
        } catch {
            // A well-formed sink that cannot work (a jsonl file that cannot be opened): "the sink is
            // misconfigured, nothing lost", the same 12 as a daemon pass that halts on its sink's configuration.
            throw fail(error.description, status: DrainResult.sinkMisconfigured.exitCode)
        }
        let options = try queue.options()
        let store = try withQueue { () throws(QueueError) in try QueueStore(path: path, options: options) }
        var logger = Logger(label: "queuectl.drain")
        logger.logLevel = verbose ? .debug : .warning
        let drainer = Drainer(
            store: store, sink: destination,
            options: DrainOptions(
                batchSize: batchSize, leaseMilliseconds: OptionRange.leaseMilliseconds(seconds: leaseSeconds),
                maxAttempts: maxAttempts, maxInFlight: maxInFlight),
            logger: logger)
        let summary: DrainSummary
        do {
            summary = try await drainer.drain()
        } catch {
            await store.close()
            throw fail(error)
        }
        await store.close()
        let text = json ? JSONOutput.summary(summary).serialized + "\n" : Self.describe(summary)
        // When records go to stdout, the summary must not mix with them.
        if spec == .jsonLines(path: "-") {
            writeStandardError(text)
        } else {
            writeStandardOutput(text)
        }
        if summary.result != .allDelivered { throw ExitCode(summary.result.exitCode) }
    }

    static func describe(_ summary: DrainSummary) -> String {
        describe(
            delivered: summary.delivered, retried: summary.retried, dead: summary.dead,
            remaining: summary.remaining.map { ($0.pending, $0.leased, $0.dead) },
            halt: summary.halt?.description, lockOwner: summary.lockHolder?.owner)
    }

    /// The one-line summary, shared by `--local` and the daemon's `--wait` answer.
    static func describe(
        delivered: Int, retried: Int, dead: Int, remaining: (pending: Int, leased: Int, dead: Int)?, halt: String?,
        lockOwner: String?
    ) -> String {
        var text = "delivered \(delivered), retried \(retried), dead \(dead)"
        if let remaining {
            text += "; now pending \(remaining.pending), leased \(remaining.leased), dead \(remaining.dead)"
        }
        if let halt { text += "; stopped early: " + ExternalText.escaped(halt) }
        if let lockOwner { text += "; not run: another drainer holds the lock (\(ExternalText.escaped(lockOwner)))" }
        return text + "\n"
    }
}
