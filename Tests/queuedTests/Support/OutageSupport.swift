import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// One outage of the fake `/users/track` as issue 30 tried it from outside: writers write throughout, the app
/// launches every 15 s, the sink goes down for `seconds` and comes back; then every record must be delivered,
/// once, in each user's order, none dead, with few requests during the outage and a quick recovery.
struct OutageRun {
    enum Kind: String, CaseIterable, Sendable {
        /// Every request answered 500.
        case serverErrors = "500s"
        /// Nothing listens on the port.
        case connectionRefused = "connection refused"
        /// Every request read and never answered (BrazeSink's 30 s request timeout ends each).
        case hanging = "hanging"
    }

    /// What one run measured.
    struct Figures: CustomStringConvertible {
        var kind: Kind
        var outageSeconds: Double
        var enqueued = 0
        /// `/users/track` requests started during the outage (the daemon's own count: a refused connection never
        /// reaches the fake).
        var requestsDuringOutage = 0
        /// From the sink's return until every record enqueued before it was at the fake.
        var secondsToDeliverAfterRecovery = 0.0
        var deadLetters = 0
        var report: HistoryChecker.Report?
        var restarted = false

        var description: String {
            "outage \(kind.rawValue) \(Int(outageSeconds)) s: enqueued \(enqueued), requests during the outage "
                + "\(requestsDuringOutage) (one per \(String(format: "%.1f", outageSeconds / Double(max(1, requestsDuringOutage)))) s), "
                + "delivered within \(String(format: "%.1f", secondsToDeliverAfterRecovery)) s of the recovery, "
                + "dead \(deadLetters)\(restarted ? ", daemon SIGKILLed and restarted mid-outage" : ""); "
                + "\(report.map { "\($0)" } ?? "")"
        }
    }

    let kind: Kind
    let seconds: Double
    /// SIGKILL the daemon half way through the outage and start another on the same file (point 3: order across a
    /// restart and the takeover of the dead daemon's leases).
    var restartMidOutage = false

    /// Runs the scenario and returns what it measured; `#expect`s the outcome of issue 30's outside check.
    func run() async throws -> Figures {
        var figures = Figures(kind: kind, outageSeconds: seconds, restarted: restartMidOutage)
        try await BrazeScenario.run { scenario in
            let writes = Locked<[MarkedRecord]>([])
            var daemon = try await scenario.startDaemon(arguments: ["--drain-on-start"])
            let current = Locked(daemon)
            // The writers: 5 records every 2 s over 10 users, in one process each time (ids follow the list).
            let writer = Task {
                var batch = 0
                while !Task.isCancelled {
                    let records = (0..<5).map { index in
                        let number = batch * 5 + index
                        return MarkedRecord(
                            marker: "\(kind == .serverErrors ? "s" : kind == .hanging ? "h" : "r")\(number)",
                            user: "u\(number % 10)", kind: "event")
                    }
                    let lines = records.map(\.line).joined(separator: "\n") + "\n"
                    let result = try? await queuectl(
                        ["enqueue", "--ndjson", "-"], db: scenario.db, stdin: lines, in: scenario.scratch)
                    if result?.status == 0 { writes.withLock { $0.append(contentsOf: records) } }
                    batch += 1
                    try? await Task.sleep(for: .seconds(2))  // the writers' pace, not a wait for anything
                }
            }
            // The app launching every 15 s.
            let launcher = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(15))  // the app's pace
                    current.value.signal(SIGUSR1)
                }
            }
            defer {
                writer.cancel()
                launcher.cancel()
            }
            do {
                try await waitFor("the first records delivered", timeout: .seconds(60)) {
                    BrazeFault.received(scenario.server).count >= 5
                }
                let requestsBefore = try await Self.requests(daemon)
                let start = ContinuousClock.now
                switch kind {
                case .serverErrors:
                    var faults = FakeBrazeFaults()
                    faults.serverErrorRate = 1
                    faults.delayMilliseconds = 10
                    scenario.server.setFaults(faults)
                case .connectionRefused:
                    await scenario.server.stopListening()
                case .hanging:
                    var faults = FakeBrazeFaults()
                    faults.hangRate = 1
                    scenario.server.setFaults(faults)
                }
                // The hanging sink needs a request timeout (30 s) before anything fails.
                try await Self.waitUntilUnavailable(daemon, timeout: .seconds(kind == .hanging ? 120 : 60))
                try await Self.expectStatusShowsTheOutage(daemon, scenario: scenario)
                var requestsOfEarlierDaemons = 0
                if restartMidOutage {
                    try await Task.sleep(until: start + .seconds(seconds / 2))  // half way through
                    requestsOfEarlierDaemons = try await Self.requests(daemon) - requestsBefore
                    daemon.signal(SIGKILL)
                    _ = await daemon.waitForExit(timeout: .seconds(20))
                    daemon = try await scenario.startDaemon(name: "d2", arguments: ["--drain-on-start"])
                    current.withLock { $0 = daemon }
                    try await Self.waitUntilUnavailable(daemon, timeout: .seconds(60))
                }
                try await Task.sleep(until: start + .seconds(seconds))  // the outage's length
                figures.requestsDuringOutage =
                    requestsOfEarlierDaemons + (try await Self.requests(daemon))
                    - (restartMidOutage ? 0 : requestsBefore)
                switch kind {
                case .serverErrors, .hanging: scenario.server.setFaults(FakeBrazeFaults())
                case .connectionRefused: try await scenario.server.startListening()
                }
                let recovered = ContinuousClock.now
                writer.cancel()
                _ = await writer.value
                let written = writes.value
                figures.enqueued = written.count
                let markers = Set(written.map(\.marker))
                try await waitFor("every record delivered after the recovery", timeout: .seconds(150)) {
                    markers.isSubset(of: Set(BrazeFault.received(scenario.server).map(\.marker)))
                }
                figures.secondsToDeliverAfterRecovery = Self.seconds(ContinuousClock.now - recovered)
                let state = try await daemon.status()
                #expect(
                    ((state["daemon"] as? [String: Any])?["sink"] as? [String: Any])?["state"] as? String
                        == "available", "\(state)")
                launcher.cancel()
                try await withDaemon(daemon) { _ in }
            } catch {
                await daemon.stop()
                throw error
            }
            let written = writes.value
            figures.deadLetters = try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch).count
            // One writer, one process at a time: the order of the list is the order of the ids.
            let order = Dictionary(
                written.enumerated().map { ($0.element.marker, Int64($0.offset)) }, uniquingKeysWith: { a, _ in a })
            let delivered = BrazeFault.received(scenario.server).filter(\.accepted).map {
                HistoryChecker.Delivery(marker: $0.marker, user: $0.user, id: order[$0.marker])
            }
            let report = HistoryChecker.check(enqueued: Set(written.map(\.marker)), delivered: delivered)
            figures.report = report
            expectDeliveredOnce(report)
            #expect(figures.deadLetters == 0, "an outage made dead letters: \(figures)")
            #expect(
                figures.requestsDuringOutage <= Int(seconds / 5) + 4,
                "about one request per 5 s at most during the outage: \(figures)")
            #expect(figures.secondsToDeliverAfterRecovery <= 150, "\(figures)")
        }
        return figures
    }

    /// `/users/track` requests the daemon started (answered or not): its request-latency histogram's count.
    static func requests(_ daemon: DaemonProcess) async throws -> Int {
        let metrics = try await daemon.request("GET", "/metrics").body
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("eventqueue_braze_request_duration_seconds_count ")
        }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? 0
    }

    static func waitUntilUnavailable(_ daemon: DaemonProcess, timeout: Duration) async throws {
        try await waitFor("the daemon to report the sink unavailable", timeout: timeout, every: .milliseconds(250)) {
            let sink = (try await daemon.daemonStatus())["sink"] as? [String: Any]
            return sink?["state"] as? String == "unavailable"
        }
    }

    /// `GET /status`, `/metrics` and `queuectl status` all say so, with the reason and the next probe.
    static func expectStatusShowsTheOutage(_ daemon: DaemonProcess, scenario: BrazeScenario) async throws {
        let sink = try #require((try await daemon.daemonStatus())["sink"] as? [String: Any])
        #expect(sink["since"] is String && sink["next_probe_at"] is String, "\(sink)")
        #expect((sink["last_error"] as? String ?? "").isEmpty == false, "\(sink)")
        let metrics = try await daemon.request("GET", "/metrics").body
        #expect(metrics.contains("\neventqueue_sink_available 0"), "\(metrics)")
        let status = try await EventQueueTestSupport.run(
            Products.queuectl, ["status", "--db", scenario.db, "--socket", daemon.socket], in: scenario.scratch)
        #expect(status.stdout.contains("sink:           unavailable since"), "\(status.stdout)")
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
