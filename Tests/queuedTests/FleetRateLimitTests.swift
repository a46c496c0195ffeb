import EventQueueTestSupport
import FakeBraze
import Foundation
import Testing

/// Several hosts sharing one Braze workspace (issue 20): three `queued` daemons, each with its own queue file,
/// against one fake that enforces a scaled-down workspace limit in fixed windows aligned to the clock. Reaching
/// the limit is the normal state: no pass may end because of it, nothing is lost or reordered, and the fleet
/// uses most of the limit.
@Suite struct FleetRateLimitTests {
    static let hosts = 3
    static let recordsPerHost = 3_000
    static let usersPerHost = 1_000
    /// 120 full requests in all at 40 per 3 s window: 9 s if the limit is used fully.
    static let limit = 40
    static let windowSeconds = 3

    @Test func threeDaemonsShareOneWorkspaceLimitWithoutStalling() async throws {
        let scratch = Scratch()
        let key = BrazeFault.makeKey()
        var faults = FakeBrazeFaults()
        faults.workspaceLimit = Self.limit
        faults.workspaceWindowSeconds = Self.windowSeconds
        faults.delayMilliseconds = 50
        var dbs: [String] = []
        var records: [MarkedRecord] = []
        for host in 0..<Self.hosts {
            let db = scratch.file("host\(host).db")
            let made = MarkedRecord.make(Self.recordsPerHost, users: Self.usersPerHost, prefix: "h\(host)-")
                .map { record in
                    var copy = record
                    copy.user = "h\(host)-" + record.user
                    return copy
                }
            records += try await BrazeFault.enqueue(made, db: db, in: scratch)
            dbs.append(db)
        }
        try await withFakeBraze(key: key, faults: faults) { server in
            var daemons: [DaemonProcess] = []
            defer { for daemon in daemons { daemon.signal(SIGKILL) } }
            for (host, db) in dbs.enumerated() {
                let daemon = try await DaemonProcess(
                    scratch: scratch, db: db, name: "host\(host)", arguments: ["--sink", "braze:" + server.baseURL],
                    environment: ["BRAZE_API_KEY": key])
                BrazeFault.pumpNotifications(daemon)
                daemons.append(daemon)
            }
            let start = ContinuousClock.now
            for daemon in daemons { #expect(try await daemon.request("POST", "/launch").status == 202) }
            var finished: [Duration] = []
            for daemon in daemons {
                try await BrazeFault.waitUntilSettled(daemon, timeout: .seconds(90))
                finished.append(ContinuousClock.now - start)
            }
            let elapsed = finished.max() ?? .zero
            // The rate-limit state, where an operator looks: `queuectl status --json` and `/metrics`.
            let status = try await queuectl(
                ["status", "--json", "--socket", daemons[0].socket], db: dbs[0], in: scratch)
            let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            let rate = try #require(object?["rate_limit"] as? [String: Any], "\(status.stdout)")
            #expect(rate["limit"] as? Int == Self.limit)
            #expect(rate["remaining"] is Int && rate["rate_limited_requests"] is Int, "\(rate)")
            let metrics = try await daemons[0].request("GET", "/metrics").body
            #expect(metrics.contains("eventqueue_braze_rate_limit_limit \(Self.limit)"), "\(metrics)")
            #expect(metrics.contains("eventqueue_braze_rate_limited_requests_total"))
            for daemon in daemons {
                #expect(
                    !daemon.log.contains("drain pass stopped early"), "a pass ended early:\n\(daemon.log.suffix(3000))")
                let passes = (try await daemon.daemonStatus())["passes"] as? Int
                #expect(passes == 1, "one pass delivered the whole backlog, waiting for the limit inside it")
                _ = await daemon.stop()
            }
            daemons = []
            let report = BrazeFault.check(records, expected: Set(records.map(\.marker)), server: server)
            expectDeliveredOnce(report)
            let stats = server.stats()
            let accepted = stats.byStatus[201] ?? 0
            let refused = stats.byStatus[429] ?? 0
            let ideal = Double(Self.hosts * Self.recordsPerHost) / 75 / Double(Self.limit) * Double(Self.windowSeconds)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let share = Double(refused) / Double(max(1, accepted + refused))
            print(
                "Fleet: \(Self.hosts) daemons, limit \(Self.limit)/\(Self.windowSeconds) s: \(accepted) accepted, "
                    + "\(refused) answered 429 (\(Int(share * 100)) %), all done in \(seconds) s (ideal \(ideal) s, "
                    + "\(Int(ideal / seconds * 100)) %); \(report)")
            // The bench's targets (docs/PERFORMANCE.md) are 85 % and 10 %; a shared CI machine gets some slack.
            #expect(ideal / seconds >= 0.7, "efficiency \(ideal / seconds)")
            #expect(share <= 0.15, "\(refused) of \(accepted + refused) requests answered 429")
        }
    }
}
