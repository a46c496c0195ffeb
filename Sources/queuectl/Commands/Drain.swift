import ArgumentParser
import EventQueue
import EventQueueCommandLine
import EventQueueDelivery
import Logging

struct Drain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Ask the queued daemon to drain (or, with --local, deliver in this process).",
        discussion: """
            Without --local the launch goes to the daemon's control socket. \(QueueEnvironment.socketHelp) \
            Without --wait it exits 0 once the daemon accepted the launch; with --wait it shows progress on stderr \
            and the pass summary on stdout. --wait stops waiting and exits 11, with the reason, when the daemon \
            reports the sink unavailable (after its next probe, if due within --timeout) or a rate-limit wait of more \
            than a minute, and after --timeout seconds (default 900); the daemon's \
            pass goes on. --local against a sink that fails exits 11 with the reason once the sink is unavailable.

            """
                + ExitStatus.helpText(
                    listing: [
                        .success, .someDead, .recordsRemain, .sinkMisconfigured, .anotherDrainerRunning, .unavailable,
                        .refused,
                    ])
    )

    @Flag(help: "Drain in this process instead of asking the daemon.")
    var local = false

    @Option(help: "The daemon's control socket (default: $EVENTQUEUE_SOCKET, else the default path below).")
    var socket: String?

    @Flag(help: "Wait for the daemon's pass: progress to stderr, the summary to stdout, its result as exit status.")
    var wait = false

    @Option(
        help: """
            With --wait: stop waiting after SECONDS (default 900) and exit 11; the daemon's pass goes on.
            """)
    var timeout: Double?

    /// `--timeout`'s range, in seconds: a day at most.
    static let timeoutRange = 0.1...86_400.0

    func validate() throws {
        guard let timeout else { return }
        if !wait || local { throw ValidationError("--timeout applies to --wait (without --local)") }
        if let problem = OptionRange.problem("--timeout", timeout, Self.timeoutRange) {
            throw ValidationError(problem)
        }
    }

    @Option(help: "Where to deliver: jsonl:PATH (jsonl:- for stdout) or null.")
    var sink: String = "jsonl:-"

    @OptionGroup var flags: DrainFlags

    @Flag(help: "Print the summary as JSON.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log each batch to stderr.")
    var verbose = false

    @OptionGroup var queue: QueueOptionGroup

    func run() async throws {
        if local, let note = flags.leaseNote(tool: "queuectl") { writeStandardError(note) }
        guard local else { return try runRemote() }
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
            throw fail(error.description, status: DrainResult.sinkMisconfigured.exitStatus)
        }
        let options = try queue.options()
        let store = try withQueue { () throws(QueueError) in try QueueStore(path: path, options: options) }
        var logger = Logger(label: "queuectl.drain")
        logger.logLevel = verbose ? .debug : .warning
        let drainer = Drainer(
            store: store, sink: destination,
            options: flags.drainOptions,
            logger: logger)
        let summary: DrainSummary
        do {
            summary = try await drainer.drain()
        } catch {
            await store.close()
            throw fail(error)
        }
        await store.close()
        let report = DrainReport(summary)
        let text = json ? JSONValue.object(report.json).serialized + "\n" : report.text
        // When records go to stdout, the summary must not mix with them.
        if spec == .jsonLines(path: "-") {
            writeStandardError(text)
        } else {
            writeStandardOutput(text)
        }
        if summary.result != .allDelivered { throw ExitCode(summary.result.exitCode) }
    }
}
