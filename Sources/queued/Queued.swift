import ArgumentParser
import EventQueue
import EventQueueCommandLine
import EventQueueDelivery
import Logging

/// The delivery daemon: sleeps until a launch (SIGUSR1, `queuectl drain`, the control socket, a timer), then
/// drains the queue into the sink.
@main
struct Queued: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queued",
        abstract: "Deliver an EventQueue file to a sink whenever a launch arrives.",
        discussion: """
            Launches: SIGUSR1; POST /launch on the control socket (what `queuectl drain` sends); --drain-on-start; \
            --drain-interval. Launches during a pass are coalesced into one more pass after it.

            \(QueueEnvironment.databaseHelp)
            \(QueueEnvironment.socketHelp) With systemd socket activation (LISTEN_FDS) the passed socket is served instead.
            Control socket (HTTP/1.1): POST /launch, POST /launch?wait=true (NDJSON progress and summary), \
            GET /status, GET /metrics (Prometheus), POST /forget?external_id=u1 (one user, as `queuectl forget`; \
            &braze_delete=true also at Braze). A socket directory another user owns or can write to is refused.

            """ + ExitStatus.helpText(for: .queued),
        version: EventQueueVersion.string
    )

    @Option(help: "The queue file (default: $EVENTQUEUE_DB, else the default path above).")
    var db: String?

    @Option(help: "Where to deliver: jsonl:PATH (jsonl:- for stdout), null, or braze:BASE_URL.")
    var sink: String = "jsonl:-"

    @Option(help: "The control socket (default: $EVENTQUEUE_SOCKET, else the default path above).")
    var socket: String?

    @OptionGroup var flags: DrainFlags

    @Flag(name: .customLong("drain-on-start"), help: "Launch a pass as soon as the daemon is ready.")
    var drainOnStart = false

    @Option(name: .customLong("drain-interval"), help: "Also launch a pass every SECONDS (default: off).")
    var drainInterval: Double?

    @Option(
        name: .customLong("shutdown-timeout"),
        help: "Seconds a stop waits for the batch in flight before cancelling it (its leases are released).")
    var shutdownTimeout: Double = 10

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = "info"

    @Option(name: .customLong("api-key-file"), help: "A file holding the sink's API key (braze).")
    var apiKeyFile: String?

    @Option(name: .customLong("braze-max-objects"), help: "At most N objects per Braze request, all arrays combined.")
    var brazeMaxObjects: Int?

    @Option(
        name: .customLong("settle-delay"),
        help: """
            Seconds an identity call (identify, alias, merge) holds its users' later records after Braze answered it, for Braze to apply it first (default: 1; 0 to 60).
            """)
    var settleDelay: Double = 1

    @Option(
        name: .customLong("max-requests-per-second"),
        help: "At most N Braze requests start in any 1 s (this host's share of the workspace limit; default: none).")
    var maxRequestsPerSecond: Int?

    @Option(
        name: .customLong("max-queue-bytes"),
        help: """
            The most bytes the queue file's records may take (pages in use), recorded in the file so that every \
            writer enforces it (default: QUEUED_MAX_QUEUE_BYTES in the environment or the configuration file, else \
            0: no limit beyond the free-space reserve).
            """)
    var maxQueueBytes: Int64?

    @Option(
        name: .customLong("when-full"),
        help: """
            At the limit: refuse (store nothing, the enqueue fails; exit 74 for queuectl) or drop-oldest (delete the \
            oldest dead letters, then the oldest pending records, never leased ones). Default: QUEUED_WHEN_FULL, \
            else refuse.
            """)
    var whenFull: String?

    @Option(
        name: .customLong("max-age-seconds"),
        help: """
            A pending record older than this becomes a dead letter whose reason begins with "expired" (never \
            deleted); 0 keeps records forever. Default: QUEUED_MAX_AGE_SECONDS, else 604800 (one week).
            """)
    var maxAgeSeconds: Int64?

    /// A usage error is one line on stderr, as the daemon's other errors and `queuectl`'s are (docs/OPERATING.md).
    static func main() async {
        await runReportingErrors(nil) { message in
            if !message.isEmpty { DaemonFailure.writeErrorLine(message + " (see `queued --help`)") }
        }
    }

    /// Every numeric option of the daemon's own within its range (`OptionRange`), before anything uses it: exit
    /// 64 with the range. The drain flags check themselves (`DrainFlags.validate()`).
    func validate() throws {
        let problems = [
            OptionRange.problem("--shutdown-timeout", shutdownTimeout, OptionRange.shutdownTimeoutSeconds),
            drainInterval.flatMap { OptionRange.problem("--drain-interval", $0, OptionRange.drainIntervalSeconds) },
            brazeMaxObjects.flatMap { OptionRange.problem("--braze-max-objects", $0, OptionRange.brazeMaxObjects) },
            OptionRange.problem("--settle-delay", settleDelay, 0...60),
            maxRequestsPerSecond.flatMap {
                OptionRange.problem("--max-requests-per-second", $0, OptionRange.maxRequestsPerSecond)
            },
            maxQueueBytes.flatMap { LimitSettings.problem(maxQueueBytes: $0) },
            whenFull.flatMap {
                QueueLimits.WhenFull(rawValue: $0) == nil
                    ? "--when-full must be refuse or drop-oldest (got \($0))" : nil
            },
            maxAgeSeconds.flatMap { OptionRange.problem("--max-age-seconds", $0, OptionRange.maxAgeSeconds) },
        ]
        if let problem = problems.compactMap({ $0 }).first { throw ValidationError(problem) }
    }

    func run() async throws {
        if let note = flags.leaseNote(tool: "queued") { writeStandardError(note) }
        do throws(DaemonFailure) {
            let (level, queueOptions, limits) = try configuration()
            LoggingSystem.bootstrap { label in StandardErrorLogHandler(label: label, level: level) }
            try await serve(queueOptions: queueOptions, limits: limits)
        } catch {
            throw error.exit()
        }
    }

    /// The log level, queue options and limits: a value that cannot work is refused before anything is opened.
    private func configuration() throws(DaemonFailure) -> (Logger.Level, QueueOptions, QueueLimits) {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw .configuration(
                "--log-level \"\(logLevel)\" is not a level: use trace, debug, info, notice, warning, error or critical"
            )
        }
        do {
            let queueOptions = try QueueEnvironment.options()
            let limits = try LimitSettings.resolve(
                maxQueueBytes: maxQueueBytes, whenFull: whenFull.flatMap(QueueLimits.WhenFull.init(rawValue:)),
                maxAgeSeconds: maxAgeSeconds)
            return (level, queueOptions, limits)
        } catch {
            throw .configuration(error.description)
        }
    }
}
