import EventQueue
import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `queuectl forget` against a real daemon and the fake Braze over real HTTP (issue 31, "How it will be checked"):
/// the user's records and their bytes leave the file, and with `--braze-delete` exactly one `/users/delete` naming
/// the user follows every `/users/track` request that carried a record of theirs, in the fake's own timeline.
@Suite(.timeLimit(.minutes(3)))
struct ForgetDaemonTests {
    /// Five records of u1 and five of u2, each with an e-mail address (u1's are the canaries).
    static let lines =
        (1...5).flatMap { index in
            [
                #"{"type":"attribute","external_id":"u1","email":"canary-\#(index)@example.com"}"#,
                #"{"type":"attribute","external_id":"u2","email":"kept-\#(index)@example.com"}"#,
            ]
        }.joined(separator: "\n") + "\n"

    static func enqueue(_ scenario: BrazeScenario) async throws {
        let result = try await queuectl(
            ["enqueue", "--ndjson", "-"], db: scenario.db, stdin: lines, in: scenario.scratch)
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// Whether the queue file or its WAL holds `text`, read as raw bytes.
    static func fileHolds(_ text: String, db: String) -> Bool {
        [db, db + "-wal"].contains { path in
            (FileManager.default.contents(atPath: path) ?? Data()).range(of: Data(text.utf8)) != nil
        }
    }

    static func forget(_ arguments: [String], _ scenario: BrazeScenario, socket: String) async throws -> ProcessResult {
        try await queuectl(
            ["forget"] + arguments + ["--socket", socket, "--json"], db: scenario.db, in: scenario.scratch)
    }

    @Test func forgetBesideTheDaemonLeavesTheOtherUserAndNoByteOfTheForgotten() async throws {
        try await BrazeScenario.run { scenario in
            try await Self.enqueue(scenario)
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let result = try await Self.forget(["--external-id", "u1"], scenario, socket: daemon.socket)
                #expect(result.status == 0, "\(result.stderr)")
                let report = try #require(
                    try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
                #expect(report["pending"] as? Int == 5 && report["bytes_gone"] as? Bool == true, "\(report)")
                #expect(report["by"] as? String == "local", "queuectl forgets on its own connection: \(report)")
                let live = try await BrazeFault.peek(db: scenario.db, in: scenario.scratch)
                #expect(live.count == 5)
                #expect(live.allSatisfy { ($0["object"] as? [String: Any])?["external_id"] as? String == "u2" })
                for index in 1...5 {
                    #expect(!Self.fileHolds("canary-\(index)@example.com", db: scenario.db), "canary \(index)")
                }
                #expect(Self.fileHolds("kept-1@example.com", db: scenario.db), "the grep sees what is there")
            }
        }
    }

    /// `POST /forget` answers as in 1.4.0's first builds (scripts may call it): the daemon forgets, on a connection
    /// and a thread of its own, and reports it.
    @Test func theForgetEndpointStillForgetsAndReports() async throws {
        try await BrazeScenario.run { scenario in
            try await Self.enqueue(scenario)
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let answer = try await daemon.request("POST", "/forget?external_id=u1")
                #expect(answer.status == 200, "\(answer.body)")
                let report = try #require(
                    try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
                #expect(report["by"] as? String == "daemon" && report["pending"] as? Int == 5, "\(report)")
                #expect(report["bytes_gone"] as? Bool == true, "\(report)")
                #expect(!Self.fileHolds("canary-1@example.com", db: scenario.db))
                #expect(try await BrazeFault.peek(db: scenario.db, in: scenario.scratch).count == 5)
            }
        }
    }

    /// Issue 40 #3: many users in one `forget --ndjson`, one scrub; the daemon, asked to launch, deletes them at
    /// Braze in requests of at most 50 identifiers of one type, each user once.
    @Test func manyUsersAreDeletedAtBrazeInRequestsOfAtMostFiftyOfOneType() async throws {
        try await BrazeScenario.run { scenario in
            try await Self.enqueue(scenario)
            let externalIDs = (0..<120).map { "x\($0)" }
            let emails = (0..<60).map { "m\($0)@example.com" }
            let lines =
                externalIDs.map { #"{"external_id":"\#($0)"}"# } + emails.map { #"{"email":"\#($0)"}"# }
                + [#"{"external_id":"u1"}"#]
            let file = scenario.scratch.file("users.ndjson")
            try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let result = try await Self.forget(
                    ["--ndjson", file, "--braze-delete"], scenario, socket: daemon.socket)
                #expect(result.status == 0, "\(result.stderr)")
                let report = try #require(
                    try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
                #expect(report["users"] as? Int == 181 && report["pending"] as? Int == 5, "\(report)")
                #expect((report["erasure_ids"] as? [Int])?.count == 181 && report["bytes_gone"] as? Bool == true)
                try await BrazeFault.waitUntilSettled(daemon)
                let deletions = scenario.server.deletions()
                #expect(deletions.allSatisfy { $0.identifiers.count <= 50 }, "\(deletions.map(\.identifiers.count))")
                let byType = Dictionary(grouping: deletions, by: \.type).mapValues { $0.flatMap(\.identifiers) }
                #expect(byType["external_ids"]?.sorted() == (externalIDs + ["u1"]).sorted())
                #expect(byType["email_addresses"]?.sorted() == emails.sorted())
                #expect(byType.count == 2 && deletions.count >= 4, "\(deletions.map(\.type))")
            }
        }
    }

    @Test func brazeDeleteIsSentOnceAfterTheUsersRecordsAndNothingOfTheUserGoesToTrack() async throws {
        try await BrazeScenario.run { scenario in
            try await Self.enqueue(scenario)
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let result = try await Self.forget(
                    ["--external-id", "u1", "--braze-delete"], scenario, socket: daemon.socket)
                #expect(result.status == 0, "\(result.stderr)")
                // The daemon launched a pass for the deletion.
                try await BrazeFault.waitUntilSettled(daemon)
                let deletions = scenario.server.deletions()
                #expect(deletions.map(\.type) == ["external_ids"] && deletions.map(\.identifiers) == [["u1"]])
                let tracked = scenario.server.received().map(\.json)
                #expect(tracked.count == 5 && tracked.allSatisfy { $0.contains(#""external_id":"u2""#) }, "\(tracked)")
                let status = try await daemon.status()
                #expect(status["erasures_pending"] as? Int == 0 && status["erasures_dead"] as? Int == 0)
                let metrics = try await daemon.request("GET", "/metrics").body
                #expect(metrics.contains("eventqueue_erasures_delivered_total 1"), "\(metrics)")
                #expect(metrics.contains("eventqueue_erasures_pending 0"))
            }
        }
    }

    /// The checker's case: u1's records are in a `/users/track` request that takes 2 s when the forget runs; the
    /// deletion starts only after that request has been answered, and u1's records are not sent again.
    @Test func theDeletionStartsAfterTheRequestInFlightThatCarriedTheUser() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 2_000
        try await BrazeScenario.run(faults: faults) { scenario in
            try await Self.enqueue(scenario)
            let daemon = try await scenario.startDaemon(arguments: ["--drain-on-start"])
            try await withDaemon(daemon) { daemon in
                let server = scenario.server
                try await waitFor("u1's request in flight") {
                    server.timeline().contains { $0.phase == .started && $0.users.contains("external_id=text:u1") }
                }
                let result = try await Self.forget(
                    ["--external-id", "u1", "--braze-delete"], scenario, socket: daemon.socket)
                #expect(result.status == 0, "\(result.stderr)")
                let report = try #require(
                    try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
                #expect(report["leased"] as? Int == 5, "u1's records were in flight: \(report)")
                try await BrazeFault.waitUntilSettled(daemon)
                let timeline = server.timeline()
                let u1Requests = Set(
                    timeline.filter {
                        $0.endpoint == "/users/track" && $0.phase == .started
                            && $0.users.contains("external_id=text:u1")
                    }.map(\.request))
                let answered = timeline.filter {
                    $0.endpoint == "/users/track" && $0.phase == .answered && u1Requests.contains($0.request)
                }.map(\.sequence)
                let deleteStarted = try #require(
                    timeline.first { $0.endpoint == "/users/delete" && $0.phase == .started }?.sequence,
                    "no deletion: \(timeline)")
                #expect(answered.count == u1Requests.count && answered.allSatisfy { $0 < deleteStarted }, "\(timeline)")
                #expect(
                    !timeline.contains {
                        $0.sequence > deleteStarted && $0.users.contains("external_id=text:u1")
                            && $0.endpoint == "/users/track"
                    })
                #expect(server.deletions().map(\.identifiers) == [["u1"]])
                let u1Objects = server.received().filter { $0.json.contains(#""external_id":"u1""#) }
                #expect(u1Objects.count == 5, "sent once, in the request in flight, never again: \(u1Objects.count)")
            }
        }
    }
}
