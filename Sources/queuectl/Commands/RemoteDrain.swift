import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

/// `queuectl drain` without `--local`: the launch goes to the daemon, which owns the sink and the schedule.
struct RemoteDrain {
    let socketPath: String
    let json: Bool
    /// The queue file the caller means; its owner is the daemon's user (see `SocketTrust`).
    var queuePath: String?

    func run(wait: Bool) throws {
        let client = DaemonClient(socketPath: socketPath)
        do {
            try SocketTrust(socketPath: socketPath, queuePath: queuePath).verify()
        } catch {
            throw fail("refusing to talk to \(socketPath): \(error)", status: .refused)
        }
        do {
            if wait {
                try follow(client)
            } else {
                try client.launch()
            }
        } catch is DaemonClient.Unreachable {
            throw fail(
                "no queued daemon listening on \(socketPath): start it, or drain in this process with --local",
                status: .unavailable)
        } catch let refusal as DaemonClient.Refused {
            throw fail("queued refused the launch (HTTP \(refusal.status)): \(refusal.message)", status: .refused)
        }
    }

    /// Shows the daemon's progress lines on stderr and its summary, read back into the one `DrainReport` shape,
    /// on stdout: the same keys and text as `drain --local`.
    private func follow(_ client: DaemonClient) throws {
        var summary: JSONObject?
        var failure: String?
        var failureStatus = ExitStatus.ioError
        try client.launchAndWait { line in
            guard let object = line.objectValue else { return }
            switch object["event"]?.stringValue {
            case "progress":
                writeStandardError(
                    "batch \(Self.int(object, "batches")): delivered \(Self.int(object, "delivered")), retried "
                        + "\(Self.int(object, "retried")), dead \(Self.int(object, "dead")), "
                        + "in flight \(Self.int(object, "in_flight"))\n")
            case "summary":
                summary = object
            case "error":
                failure = object["message"]?.stringValue ?? "unknown error"
                // The daemon's cause (75: the queue was busy); a status outside the table, or none (an older
                // daemon), stays an I/O error.
                if let code = object["exit_status"]?.numberValue?.integerValue,
                    let status = Int32(exactly: code).flatMap(ExitStatus.init(rawValue:))
                {
                    failureStatus = status
                }
            default:
                break
            }
        }
        guard let summary else {
            throw fail(
                "the daemon's pass did not finish: \(failure ?? "the connection closed")",
                status: failure == nil ? .ioError : failureStatus)
        }
        let report: DrainReport
        do {
            report = try DrainReport(json: summary)
        } catch {
            throw fail(error.description, status: .ioError)
        }
        writeStandardOutput(json ? JSONValue.object(report.json).serialized + "\n" : report.text)
        if report.result != .allDelivered { throw ExitCode(report.result.exitCode) }
    }

    /// A progress count (progress lines are shown, never acted on: a missing count shows as 0).
    private static func int(_ object: JSONObject, _ key: String) -> Int {
        object[key]?.numberValue?.integerValue.map { Int($0) } ?? 0
    }
}
