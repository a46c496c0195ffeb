import ArgumentParser
import EventQueue
import EventQueueDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// Every exit status of `queuectl` and `queued`, in one table: both tools exit with these values, their `--help`
/// lists them from here, and docs/OPERATING.md's table is checked against this one by a test (`ExitStatusTests`),
/// so the documented and the real statuses cannot drift apart. sysexits.h values where one fits (64 and up), so
/// that systemd's `RestartPreventExitStatus=78` keeps a broken setup from restart loops; 10 to 13 are drain
/// results.
///
/// Scripts act on these numbers: never renumber one.
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    case problemsFound = 1
    case someDead = 10
    case recordsRemain = 11
    case sinkMisconfigured = 12
    case anotherDrainerRunning = 13
    case usage = 64
    case invalidInput = 65
    case inputMissing = 66
    case unavailable = 69
    case internalError = 70
    case cannotCreate = 73
    case ioError = 74
    case busy = 75
    case refused = 77
    case badQueueFileOrConfiguration = 78

    /// The status for a queue error, the same in both tools: a refused record (invalid, an invalid key, a key
    /// reused for another record) 65, busy 75, a file that is not a usable queue 78, one that cannot be opened 73,
    /// and any other failure (disk full, the queue at its size limit, I/O) 74.
    public init(_ error: QueueError) {
        switch error {
        case .invalidRecord, .invalidIdempotencyKey, .idempotencyKeyReused: self = .invalidInput
        case .notAQueueFile, .corrupt, .schemaTooNew, .needsNewerRelease, .unsafeQueueFile, .erasureNeedsNewerSchema:
            self = .badQueueFileOrConfiguration
        case .cannotOpen, .readOnly: self = .cannotCreate
        case .erasureNotPermitted: self = .refused
        case .busy: self = .busy
        case .diskFull, .queueFull, .sqlite: self = .ioError
        }
    }

    public enum Tool: String, CaseIterable, Sendable {
        case queuectl
        case queued
    }

    /// What the status means, as docs/OPERATING.md's table and `--help` say it.
    public var meaning: String {
        switch self {
        case .success:
            return "success (`drain`: everything was delivered; `queued`: stopped cleanly on SIGTERM or SIGINT)"
        case .problemsFound:
            return "`check` found a problem, or an id given to `dead retry`/`purge` is not a dead letter"
        case .someDead: return "`drain`: some records went dead in this pass"
        case .recordsRemain: return "`drain`: records remain (waiting for a retry, or the sink is unavailable)"
        case .sinkMisconfigured:
            return "`drain`: the sink is misconfigured, nothing was lost (for `drain --local` also a jsonl file "
                + "that cannot be opened)"
        case .anotherDrainerRunning: return "`drain`: another drain pass holds the queue's drain lock"
        case .usage:
            return "usage: an unknown flag or argument, a value that does not parse (`--price abc`, `--prop` "
                + "without `=`), or a numeric option out of its range"
        case .invalidInput:
            return "invalid record or input: it breaks Braze's rules or is not a record (with the line or index "
                + "and the field)"
        case .inputMissing:
            return "input file missing, or no queue at the path (`status`, `peek`, `dead`, `check`, "
                + "`drain --local`)"
        case .unavailable: return "`drain`: no daemon listens on the control socket"
        case .internalError: return "`queued`: an internal failure (the log has the details)"
        case .cannotCreate:
            return "cannot open or create the queue file (`queued`: or the control socket)"
        case .ioError:
            return "disk full or I/O error, or the queue at its size limit (`enqueue` under `queued --when-full "
                + "refuse`; `drain --wait`: also a progress stream that ended without a summary)"
        case .busy: return "queue busy, retry"
        case .refused:
            return "`drain`: the daemon refused this user, or the socket is not trusted (its directory, file or "
                + "listener belongs to someone other than root, you, or the queue file's owner); `forget "
                + "--braze-delete`: you may not delete users at Braze (root, the daemon's user, eventqueue-admins)"
        case .badQueueFileOrConfiguration:
            return "not a queue file, corrupt, or a newer schema (the file is never modified); `queued`: also a "
                + "bad configuration"
        }
    }

    public var tools: [Tool] {
        switch self {
        case .success, .usage, .cannotCreate, .ioError, .busy, .badQueueFileOrConfiguration:
            return [.queuectl, .queued]
        case .internalError: return [.queued]
        default: return [.queuectl]
        }
    }

    /// The `Exit status:` paragraph of a tool's `--help`: `queuectl`'s from this table, `queued`'s in its own words
    /// (the table's name `queuectl`'s commands too).
    public static func helpText(for tool: Tool) -> String {
        guard tool == .queued else { return helpText(listing: allCases.filter { $0.tools.contains(tool) }) }
        let queued: KeyValuePairs<ExitStatus, String> = [
            .success: "stopped cleanly on SIGTERM or SIGINT",
            .usage: "usage: an unknown flag or argument, or a value that does not parse or is out of its range",
            .internalError: "an internal failure (the log has the details)",
            .cannotCreate: "cannot open or create the queue file or the control socket",
            .ioError: "disk full or I/O error", .busy: "queue busy, retry",
            .badQueueFileOrConfiguration:
                "not a queue file, corrupt, or a newer schema (the file is never modified), or a bad configuration",
        ]
        return "Exit status: " + queued.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: "; ") + "."
    }

    /// The same for some of the statuses (a subcommand's own).
    public static func helpText(listing statuses: [ExitStatus]) -> String {
        "Exit status: " + statuses.map { "\($0.rawValue) \($0.meaning)" }.joined(separator: "; ") + "."
    }
}

extension DrainResult {
    /// The exit status `queuectl drain` reports for a pass's result: the drain loop decides the result, the command
    /// line decides what a shell sees.
    public var exitStatus: ExitStatus {
        switch self {
        case .allDelivered: return .success
        case .someDead: return .someDead
        case .recordsRemain: return .recordsRemain
        case .sinkMisconfigured: return .sinkMisconfigured
        case .anotherDrainerRunning: return .anotherDrainerRunning
        }
    }

    /// `exitStatus` as the value a process exits with.
    public var exitCode: Int32 { exitStatus.rawValue }
}

extension ParsableCommand {
    /// Like ArgumentParser's `main`, except that an error's message (empty for a bare exit status) goes to `report`,
    /// which both tools write as one line on stderr (scripts and log scrapers read errors line by line); `--help` and
    /// `--version` print as usual. `afterRun` runs once the command succeeded.
    @MainActor package static func runReportingErrors(
        _ arguments: [String]?, afterRun: () -> Void = {}, report: (_ message: String) -> Void
    ) async {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            afterRun()
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            report(message(for: error))
            Glibc.exit(code.rawValue)
        }
    }
}

/// Writes `text` to stderr as it is, in one write(2).
package func writeStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
}

/// Writes `text` to stdout, every byte (`writeAll`).
package func writeStandardOutput(_ text: String) {
    var text = text
    text.withUTF8 { _ = writeAll(STDOUT_FILENO, UnsafeRawBufferPointer($0)) }
}

/// Writes every byte to `fd`, going on after `EINTR` and short writes; the `errno` of a failure, or `nil`.
package func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
    var offset = 0
    while offset < bytes.count {
        let written = write(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return errno }
        offset += written
    }
    return nil
}
