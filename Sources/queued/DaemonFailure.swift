import ArgumentParser
import EventQueue
import EventQueueDelivery
import NIOCore
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// Why the daemon could not start (or had to stop), with the exit status a supervisor acts on (`ExitStatus` says
/// why sysexits.h codes).
enum DaemonFailure: Error, Sendable, CustomStringConvertible {
    /// A flag, environment variable or sink that cannot work (exit 78, EX_CONFIG).
    case configuration(String)
    /// The queue file failed to open, or is not a usable queue (73, 74, 75 or 78 by cause).
    case queue(QueueError)
    /// The control socket could not be created or bound (exit 73, EX_CANTCREAT).
    case socket(path: String, reason: String)
    /// A part of the daemon failed while running (exit 70, EX_SOFTWARE); the log has the details.
    case service(String)

    /// The exit status, from the one table docs/OPERATING.md lists (`ExitStatus`).
    var status: ExitStatus {
        switch self {
        case .configuration: return .badQueueFileOrConfiguration
        case .socket: return .cannotCreate
        case .service: return .internalError
        case .queue(let error): return ExitStatus(error)
        }
    }

    var description: String {
        switch self {
        case .configuration(let message): return message
        case .queue(let error): return error.description
        case .service(let message):
            return "stopped after an internal failure: \(message); see the log above, and report it"
        case .socket(let path, let reason):
            // A reason that carries its own advice ("another daemon is listening on it; stop that one...") is not
            // followed by a generic one that does not fit it.
            guard !reason.contains(";") else { return "cannot listen on control socket \(path): \(reason)" }
            return "cannot listen on control socket \(path): \(reason); check the directory exists and is "
                + "writable, or pass --socket PATH"
        }
    }

    /// Binding `path` failed with `error` (NIO's `IOError` reads "bind(descriptor:ptr:bytes:): ... (errno: 2)"):
    /// the cause in words, naming the directory, and what to do.
    static func bindFailure(path: String, error: any Error) -> DaemonFailure {
        let shownDirectory = SocketDirectory.parent(of: path)
        guard let code = (error as? IOError)?.errnoCode else { return .socket(path: path, reason: "\(error)") }
        let reason: String
        switch code {
        case ENOENT, ENOTDIR:
            reason =
                "the directory \(shownDirectory) does not exist; create it, or pass --socket PATH in an "
                + "existing directory"
        case EACCES, EPERM, EROFS:
            reason =
                "user \(geteuid()) may not create a socket in \(shownDirectory) "
                + "(\(String(cString: strerror(code)))); fix the directory's permissions, or pass --socket PATH"
        case ENAMETOOLONG, EINVAL:
            reason = "the path is too long for a Unix socket (at most 107 bytes); pass a shorter --socket"
        case EADDRINUSE:
            reason = "something else is bound there; stop it, or pass --socket PATH"
        default:
            reason = String(cString: strerror(code))
        }
        return .socket(path: path, reason: reason)
    }

    /// Prints the one-line message and returns the exit code to throw.
    func exit() -> ExitCode {
        Self.writeErrorLine(description)
        return ExitCode(status.rawValue)
    }

    /// `queued: error: MESSAGE` on stderr, as one line.
    static func writeErrorLine(_ message: String) {
        writeStandardError("queued: error: " + String(message.map { $0 == "\n" ? " " : $0 }) + "\n")
    }
}
