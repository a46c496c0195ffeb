import EventQueue
import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

/// Issue 41, "Done when": identity calls queued with `queuectl` processes, delivered by a real daemon to the fake
/// Braze answering every request in 300 ms, in the users' order as the fake's own timeline shows it.
@Suite(.timeLimit(.minutes(3)))
struct IdentityCallDaemonTests {
    static let device = #"user_alias=json:{"alias_label":"device_id","alias_name":"dev-1"}"#

    static func events(_ member: String, _ prefix: String) -> String {
        (1...5).map { #"{"type":"event",\#(member),"name":"\#(prefix)-\#($0)"}"# }.joined(separator: "\n") + "\n"
    }

    static func queue(_ scenario: BrazeScenario, _ arguments: [String], stdin: String? = nil) async throws {
        let result = try await queuectl(arguments, db: scenario.db, stdin: stdin, in: scenario.scratch)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
    }

    /// Every request that carried `before` ended before the call started; every request that carried `after`
    /// started after the call ended, and not sooner than half the settle delay (1 s) later: an order of magnitude,
    /// not a margin.
    static func expectOrder(_ timeline: [FakeBrazeEvent], call: String, before: String, after: String) throws {
        let started = try #require(timeline.first { $0.endpoint == call && $0.phase == .started }, "\(timeline)")
        let ended = try #require(
            timeline.first { $0.endpoint == call && $0.phase == .answered && $0.request == started.request })
        func requests(_ user: String) -> Set<Int> {
            Set(timeline.filter { $0.endpoint == "/users/track" && $0.users.contains(user) }.map(\.request))
        }
        let earlier = timeline.filter {
            $0.endpoint == "/users/track" && $0.phase == .answered && requests(before).contains($0.request)
        }
        let later = timeline.filter {
            $0.endpoint == "/users/track" && $0.phase == .started && requests(after).contains($0.request)
        }
        #expect(!earlier.isEmpty && earlier.allSatisfy { $0.sequence < started.sequence }, "\(timeline)")
        #expect(!later.isEmpty && later.allSatisfy { $0.sequence > ended.sequence }, "\(timeline)")
        #expect(later.allSatisfy { $0.at - ended.at >= .milliseconds(500) }, "the settle delay: \(timeline)")
    }

    @Test func anIdentifyGoesAfterTheAliasesEventsAndBeforeTheUsersLaterOnes() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 300
        try await BrazeScenario.run(faults: faults) { scenario in
            let alias = #""user_alias":{"alias_name":"dev-1","alias_label":"device_id"}"#
            try await Self.queue(scenario, ["enqueue", "--ndjson", "-"], stdin: Self.events(alias, "before"))
            try await Self.queue(scenario, ["identify", "--external-id", "U1", "--alias", "dev-1:device_id"])
            try await Self.queue(
                scenario, ["enqueue", "--ndjson", "-"], stdin: Self.events(#""external_id":"U1""#, "after"))
            try await Self.queue(
                scenario, ["enqueue", "--ndjson", "-"], stdin: Self.events(#""external_id":"old""#, "old"))
            try await Self.queue(scenario, ["merge", "--merge-external-id", "old", "--keep-external-id", "U2"])
            try await Self.queue(
                scenario, ["enqueue", "--ndjson", "-"], stdin: Self.events(#""external_id":"U2""#, "kept"))
            let daemon = try await scenario.startDaemon(arguments: ["--drain-on-start"])
            try await withDaemon(daemon) { daemon in
                _ = try await BrazeFault.waitUntilSettled(daemon)
                let timeline = scenario.server.timeline()
                try Self.expectOrder(
                    timeline, call: "/users/identify", before: Self.device, after: "external_id=text:U1")
                try Self.expectOrder(
                    timeline, call: "/users/merge", before: "external_id=text:old", after: "external_id=text:U2")
                #expect(scenario.server.identityCalls().map(\.items.count) == [1, 1])
                #expect(scenario.server.received().count == 20)
            }
        }
    }

    @Test func manyIdentifiesGoInFewRequestsOfAtMostFifty() async throws {
        try await BrazeScenario.run { scenario in
            let lines = (1...120).map {
                #"{"type":"identify","external_id":"U\#($0)","identify":{"user_alias":{"alias_name":"d\#($0)","alias_label":"device_id"}}}"#
            }
            try await Self.queue(scenario, ["enqueue", "--ndjson", "-"], stdin: lines.joined(separator: "\n") + "\n")
            let daemon = try await scenario.startDaemon(arguments: ["--drain-on-start"])
            try await withDaemon(daemon) { daemon in
                _ = try await BrazeFault.waitUntilSettled(daemon)
                let calls = scenario.server.identityCalls()
                #expect(calls.reduce(0) { $0 + $1.items.count } == 120)
                #expect(calls.allSatisfy { $0.items.count <= 50 } && calls.count <= 8, "\(calls.map(\.items.count))")
            }
        }
    }
}
