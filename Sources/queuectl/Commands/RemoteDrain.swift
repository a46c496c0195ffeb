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
    /// How long `--wait` follows the pass at most (`--timeout`).
    var timeout: Duration = RemoteDrain.defaultTimeout

    /// `drain --wait --timeout`'s default: a pass that has not ended in 15 minutes is not one a shell should block
    /// on (issue 32 #5: a 429 forever, or a reset 15 minutes ahead, blocked it until killed).
    static let defaultTimeout: Duration = .seconds(900)

    /// Thrown from the line handler to stop reading the daemon's stream: waiting for the end makes no sense.
    private struct StopFollowing: Error {
        var reason: String
    }

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
    ///
    /// It stops waiting, and exits 11 at once (issue 32 #5), when the daemon says the pass met an unavailable sink
    /// or waits for a rate-limit reset more than a minute away, or when `timeout` has passed: the report then has
    /// the counts so far and `wait_ended` says why. The daemon's pass goes on.
    private func follow(_ client: DaemonClient) throws {
        var summary: JSONObject?
        var progress: JSONObject?
        var failure: String?
        var failureStatus = ExitStatus.ioError
        var waitEnded: String?
        let deadline = ContinuousClock.now + timeout
        do {
            try client.launchAndWait(deadline: deadline) { line in
                guard let object = line.objectValue else { return }
                switch object["event"]?.stringValue {
                case "sink_unavailable", "waiting":
                    throw StopFollowing(reason: object["reason"]?.stringValue ?? "the daemon's pass cannot end soon")
                case "progress":
                    progress = object
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
        } catch let stop as StopFollowing {
            waitEnded = stop.reason
        }
        if summary == nil, failure == nil, waitEnded == nil, ContinuousClock.now >= deadline {
            waitEnded = "no summary within --timeout \(Self.seconds(timeout)) s"
        }
        if let waitEnded {
            // The pass so far, as the one report shape; the daemon's pass goes on.
            var report = DrainReport(DrainSummary())
            if let progress {
                report.delivered = Self.int(progress, "delivered")
                report.retried = Self.int(progress, "retried")
                report.dead = Self.int(progress, "dead")
                report.batches = Self.int(progress, "batches")
                report.inFlight = Self.int(progress, "in_flight")
            }
            report.result = .recordsRemain
            report.waitEnded = waitEnded + "; the daemon's pass goes on"
            writeStandardOutput(json ? JSONValue.object(report.json).serialized + "\n" : report.text)
            throw fail("stopped waiting: \(waitEnded)", status: .recordsRemain)
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
        object[key]?.numberValue?.integerValue.flatMap { Int(exactly: $0) } ?? 0
    }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds)" : "\(Double(seconds) + Double(attoseconds) / 1e18)"
    }
}
