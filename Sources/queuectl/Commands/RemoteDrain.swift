import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// `queuectl drain` without `--local`: the launch goes to the daemon, which owns the sink and the schedule.
extension Drain {
    /// `drain --wait --timeout`'s default: a pass that has not ended in 15 minutes (a 429 forever, a reset 15
    /// minutes ahead) is not one a shell should block on.
    static let defaultTimeout: Duration = .seconds(900)

    /// Thrown from the line handler to stop reading the daemon's stream: waiting for the end makes no sense.
    private struct StopFollowing: Error {
        var reason: String
    }

    func runRemote() throws {
        // The queue file the caller means: its owner is the daemon's user (`SocketTrust`).
        let queuePath = QueueEnvironment.databasePath(explicit: queue.db, createDirectory: false)
        let socketPath = QueueEnvironment.socketPath(explicit: socket)
        let client = DaemonClient(socketPath: socketPath)
        if let problem = SocketTrust.problem(socketPath: socketPath, queuePath: queuePath) {
            throw fail("refusing to talk to \(socketPath): \(problem)", status: .refused)
        }
        do {
            if wait {
                try follow(client, timeout: timeout.map { .milliseconds(Int64($0 * 1000)) } ?? Self.defaultTimeout)
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
    /// It stops waiting, and exits 11, when the daemon says the pass met an unavailable sink or waits for a
    /// rate-limit reset more than a minute away, or when `timeout` has passed: the report then has the counts so far
    /// and `wait_ended` says why. The daemon's pass goes on. An unavailable sink first gets one probe, if it is due
    /// within `timeout`: right after an outage ends, the launch's probe may not go yet (at most one per
    /// `probeSpacing`, 5 s), and the pass that could not send it is not a sign the outage goes on.
    private func follow(_ client: DaemonClient, timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        var pass = try followPass(client, deadline: deadline)
        if pass.sinkUnavailable, let wait = Self.untilNextProbe(client, deadline: deadline) {
            writeStandardError("the sink is unavailable; waiting \(Self.seconds(wait)) s for its next probe\n")
            let (seconds, attoseconds) = wait.components
            usleep(UInt32(clamping: seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
            pass = try followPass(client, deadline: deadline)
        }
        var waitEnded = pass.waitEnded
        if pass.summary == nil, pass.failure == nil, waitEnded == nil, ContinuousClock.now >= deadline {
            waitEnded = "no summary within --timeout \(Self.seconds(timeout)) s"
        }
        if let waitEnded {
            var report = DrainReport(DrainSummary())
            if let progress = pass.progress {
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
        guard let report = pass.report else {
            throw fail(
                "the daemon's pass did not finish: \(pass.failure ?? "the connection closed")",
                status: pass.failure == nil ? .ioError : pass.failureStatus)
        }
        writeStandardOutput(json ? JSONValue.object(report.json).serialized + "\n" : report.text)
        if pass.sinkUnavailable, let halt = report.halt {
            throw fail("stopped waiting: \(halt)", status: .recordsRemain)
        }
        if report.result != .allDelivered { throw ExitCode(report.result.exitCode) }
    }

    private struct FollowedPass {
        var summary: JSONObject?
        var report: DrainReport?
        var progress: JSONObject?
        var failure: String?
        var failureStatus = ExitStatus.ioError
        var waitEnded: String?
        /// The pass stopped for an unavailable sink (its event, or a summary that ended on that halt).
        var sinkUnavailable = false
    }

    /// Follows the next pass until its summary, an event that makes waiting pointless, or `deadline`.
    private func followPass(_ client: DaemonClient, deadline: ContinuousClock.Instant) throws -> FollowedPass {
        var pass = FollowedPass()
        do {
            try client.launchAndWait(deadline: deadline) { line in
                guard let object = line.objectValue else { return }
                switch object["event"]?.stringValue {
                case "sink_unavailable", "waiting":
                    pass.sinkUnavailable = object["event"]?.stringValue == "sink_unavailable"
                    throw StopFollowing(reason: object["reason"]?.stringValue ?? "the daemon's pass cannot end soon")
                case "progress":
                    pass.progress = object
                    writeStandardError(
                        "batch \(Self.int(object, "batches")): delivered \(Self.int(object, "delivered")), retried "
                            + "\(Self.int(object, "retried")), dead \(Self.int(object, "dead")), "
                            + "in flight \(Self.int(object, "in_flight"))\n")
                case "summary":
                    pass.summary = object
                case "error":
                    pass.failure = object["message"]?.stringValue ?? "unknown error"
                    // The daemon's cause (75: the queue was busy); a status outside the table, or none (an older
                    // daemon), stays an I/O error.
                    if let code = object["exit_status"]?.numberValue?.integerValue,
                        let status = Int32(exactly: code).flatMap(ExitStatus.init(rawValue:))
                    {
                        pass.failureStatus = status
                    }
                default:
                    break
                }
            }
        } catch let stop as StopFollowing {
            pass.waitEnded = stop.reason
        }
        if let summary = pass.summary {
            do {
                let report = try DrainReport(json: summary)
                pass.report = report
                if report.result == .recordsRemain, report.halt?.contains("the sink is unavailable") == true {
                    pass.sinkUnavailable = true
                }
            } catch {
                throw fail(error.description, status: .ioError)
            }
        }
        return pass
    }

    /// How long until the sink's next probe (the daemon's `/status`), when it is due before `deadline`; zero when
    /// the sink is available again. `nil`: no probe before the deadline, or no answer.
    private static func untilNextProbe(_ client: DaemonClient, deadline: ContinuousClock.Instant) -> Duration? {
        let left = deadline - ContinuousClock.now
        guard left > .zero, let status = try? client.status(timeoutSeconds: 10),
            let sink = status.objectValue?["daemon"]?.objectValue?["sink"]?.objectValue
        else { return nil }
        guard sink["state"]?.stringValue == "unavailable" else { return .zero }
        guard let next = sink["next_probe_at"]?.stringValue.flatMap(ISO8601.parse) else { return nil }
        // A little past the probe's time, so that the launch finds it due.
        let wait = Duration.milliseconds(max(0, next - WallClock.nowMilliseconds()) + 100)
        return wait < left ? wait : nil
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
