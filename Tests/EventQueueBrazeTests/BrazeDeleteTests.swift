import EventQueue
import EventQueueDelivery
import FakeBraze
import Foundation
import Testing

@testable import EventQueueBraze

/// `BrazeSink.erase` against the in-process fake over real HTTP: `POST /users/delete` per identifier type, at most
/// 50 identifiers each, classified as `/users/track` answers are (issue 31).
@Suite struct BrazeDeleteTests {
    func erasure(_ id: Int64, _ user: UserIdentity) -> OutgoingErasure {
        OutgoingErasure(id: id, user: user)
    }

    @Test func deletionsGoOutPerIdentifierTypeAtMostFiftyEachAndBrazeDeletesExactlyThoseUsers() async throws {
        var erasures = (1...120).map { erasure(Int64($0), .externalID("u\($0)")) }
        erasures += [
            erasure(121, .alias(name: "n1", label: "crm")), erasure(122, .email("a@example.com")),
            erasure(123, .alias(name: "n2", label: "crm")),
        ]
        let (report, deletions, stats) = try await withSink { server, sink in
            (await sink.erase(erasures.shuffled()), server.deletions(), server.stats())
        }
        #expect(report.halt == nil)
        #expect(report.outcomes.count == 123 && report.outcomes.values.allSatisfy { $0 == .delivered })
        #expect(
            deletions.map(\.type) == [
                "external_ids", "external_ids", "external_ids", "user_aliases", "email_addresses",
            ])
        #expect(deletions.map(\.identifiers.count) == [50, 50, 20, 2, 1])
        #expect(deletions.prefix(3).flatMap(\.identifiers) == (1...120).map { "u\($0)" }, "in id order")
        #expect(
            deletions[3].identifiers == [
                #"{"alias_label":"crm","alias_name":"n1"}"#, #"{"alias_label":"crm","alias_name":"n2"}"#,
            ])
        #expect(stats.byStatus == [202: 5])
        #expect(stats.requests == 0, "nothing went to /users/track")
    }

    @Test func a400IsBisectedDownToTheIdentifierBrazeRefuses() async throws {
        var faults = FakeBrazeFaults()
        faults.deleteRejectIdentifier = "bad"
        let erasures = (1...10).map { erasure(Int64($0), .externalID($0 == 7 ? "bad" : "u\($0)")) }
        let (report, deleted) = try await withSink(faults: faults) { server, sink in
            (await sink.erase(erasures), server.deletions().flatMap(\.identifiers))
        }
        guard case .rejected(let reason)? = report.outcomes[7] else {
            Issue.record("the refused identifier is not dead-lettered: \(report)")
            return
        }
        #expect(reason.contains("400") && reason.contains("bad"))
        #expect(report.outcomes.filter { $0.value == .delivered }.count == 9)
        #expect(Set(deleted) == Set((1...10).filter { $0 != 7 }.map { "u\($0)" }))
    }

    @Test func aServerErrorRetriesTheRequestAndLeavesTheRestUntried() async throws {
        var faults = FakeBrazeFaults()
        faults.deleteFailures = [503]
        let erasures = (1...60).map { erasure(Int64($0), .externalID("u\($0)")) }
        let report = try await withSink(faults: faults) { _, sink in await sink.erase(erasures) }
        #expect(report.halt == nil)
        for id in 1...50 {
            guard case .retry(_, _, let cause)? = report.outcomes[Int64(id)] else {
                Issue.record("erasure \(id): \(String(describing: report.outcomes[Int64(id)]))")
                continue
            }
            #expect(cause == .destination, "a 5xx is Braze's failure, not the erasure's: no attempt (issue 30)")
        }
        for id in 51...60 {
            guard case .retry(let reason, _, let cause)? = report.outcomes[Int64(id)] else {
                Issue.record("erasure \(id): \(String(describing: report.outcomes[Int64(id)]))")
                continue
            }
            #expect(cause != .record && reason.hasPrefix("not sent"), "never tried, never counted")
        }
    }

    @Test func a429IsWaitedOutAndTheSameRequestSentAgain() async throws {
        var faults = FakeBrazeFaults()
        faults.deleteFailures = [429]
        let (report, stats) = try await withSink(faults: faults) { server, sink in
            (await sink.erase([erasure(1, .phone("+15555550100"))]), server.stats())
        }
        #expect(report.outcomes[1] == .delivered)
        #expect(stats.byStatus == [429: 1, 202: 1])
    }

    @Test(arguments: [403, 401])
    func aRefusedKeyHaltsThePassWithoutCountingAnAttempt(status: Int) async throws {
        var faults = FakeBrazeFaults()
        faults.deleteFailures = [status]
        let report = try await withSink(faults: faults) { _, sink in await sink.erase([erasure(1, .brazeID("b"))]) }
        #expect(report.outcomes.isEmpty)
        #expect(report.halt?.kind == .configuration)
        #expect(report.halt?.reason.contains("users.delete permission") == true, "\(String(describing: report.halt))")
    }

    @Test func theRequestBodyIsBrazesShape() {
        func body(_ erasures: [OutgoingErasure]) -> BrazeRequestBody {
            let requests = BrazeSink.deletions(erasures)
            #expect(requests.count == 1)
            let records = requests.first ?? []
            return BrazeRequestBody(
                path: "/users/delete", array: erasures[0].identifierType.rawValue,
                members: records.compactMap { $0.erasure?.user.brazeMember.value }, ids: records.map(\.id))
        }
        let alias = body([erasure(1, .alias(name: "n", label: "l"))])
        #expect(
            String(decoding: alias.bytes, as: UTF8.self) == #"{"user_aliases":[{"alias_name":"n","alias_label":"l"}]}"#)
        let ids = body([erasure(2, .externalID("b")), erasure(1, .externalID("a"))])
        #expect(String(decoding: ids.bytes, as: UTF8.self) == #"{"external_ids":["a","b"]}"#)
        #expect(ids.idsByArray == ["external_ids": [1, 2]])
    }

    @Test func aDeletionFailureRightAfterATrackAnswerIsStillAnOutageOfItsOwnBucket() async throws {
        // Each rate bucket judges its failures by its own answers (issue 40 #5): an answered /users/track says
        // nothing about /users/delete, so a failing deletion is not split as if Braze were up and costs no attempt.
        var faults = FakeBrazeFaults()
        faults.deleteFailures = [503, 503, 503]
        let (tracked, report) = try await withSink(faults: faults) { _, sink in
            let tracked = await sink.deliver([event(10, user: "t")])
            return (tracked, await sink.erase([erasure(1, .externalID("u1")), erasure(2, .externalID("u2"))]))
        }
        #expect(tracked.outcomes[10] == .delivered)
        guard case .retry(_, _, let cause)? = report.outcomes[1] else {
            Issue.record("\(report)")
            return
        }
        #expect(cause == .destination)
    }
}
