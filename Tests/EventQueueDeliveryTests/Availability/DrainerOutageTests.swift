import EventQueue
import Synchronization
import Testing

@testable import EventQueueDelivery

/// The drain loop through an outage (issue 30 points 1 to 3), in-process: a real queue file, a sink the test
/// switches down and up, and a clock the test moves.
@Suite(.timeLimit(.minutes(2)))
struct DrainerOutageTests {
    let directory = Scratch()
    var path: String { directory.queuePath }

    /// A sink of `recordsPerRequest` records per request, up to 4 deliveries at once, down while `down` is set;
    /// it keeps what it accepted, in order.
    final class SwitchedSink: Sink {
        let name = "switched"
        let maxConcurrentDeliveries = 4
        let recordsPerRequest: Int? = 5
        let down = Mutex(true)
        let accepted = Mutex<[OutgoingRecord]>([])
        let batches = Mutex<[[Int64]]>([])

        func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
            batches.withLock { $0.append(batch.map(\.id)) }
            if down.withLock({ $0 }) {
                return DeliveryReport(.retry(reason: "Braze answered 500", cause: .destination), for: batch)
            }
            accepted.withLock { $0.append(contentsOf: batch) }
            return DeliveryReport(.delivered, for: batch)
        }

        var calls: Int { batches.withLock { $0.count } }
    }

    func events(_ count: Int, users: Int) -> [Record] {
        (0..<count).map { testEvent("e\($0)", user: "u\($0 % users)") }
    }

    @Test func whileUnavailableAPassClaimsNothingUntilTheProbeIsDue() async throws {
        try enqueue(events(40, users: 8), at: path)
        let sink = SwitchedSink()
        let clock = ManualClock()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 5), clock: clock)
        let first = try await drainer.drain()
        #expect(first.halt?.kind == .unavailable)
        let calls = sink.calls
        #expect(calls >= 3, "three failures in a row")

        clock.advance(by: .seconds(4))
        let early = try await drainer.drain()
        #expect(sink.calls == calls, "no request before the probe is due")
        #expect(early.batches == 0)
        #expect(early.result == .recordsRemain)
        #expect(early.halt?.reason.contains("next probe at") == true, "\(String(describing: early.halt))")

        clock.advance(by: .seconds(3))  // past 5 s + 25 % jitter
        let probe = try await drainer.drain()
        #expect(sink.calls == calls + 1, "one probe")
        #expect(sink.batches.withLock { $0.last?.count } == 5, "one request's worth")
        #expect(probe.halt?.kind == .unavailable)
        #expect(drainer.availability.snapshot.probes == 1)
        await drainer.store.close()
        #expect(try liveRecords(path).values.allSatisfy { $0.attempts == 0 })
    }

    @Test func aSuccessfulProbeResumesAtFullSpeedInTheSamePassAndKeepsEachUsersOrder() async throws {
        let ids = try enqueue(events(60, users: 6), at: path)
        let sink = SwitchedSink()
        let clock = ManualClock()
        let drainer = try makeDrainer(
            path, sink: sink, options: DrainOptions(batchSize: 5, maxInFlight: 4), clock: clock)
        _ = try await drainer.drain()
        #expect(drainer.availability.snapshot.state == .unavailable)
        let probesBefore = sink.calls

        sink.down.withLock { $0 = false }
        drainer.availability.requestProbe()  // a launch: no wait for the backoff
        let resumed = try await drainer.drain()
        #expect(resumed.result == .allDelivered, "\(resumed)")
        #expect(resumed.halt == nil)
        #expect(resumed.delivered == 60)
        #expect(drainer.availability.snapshot.state == .available)
        let afterProbe = sink.batches.withLock { Array($0.dropFirst(probesBefore)) }
        #expect(afterProbe.first?.count == 5, "the probe: one request's worth, the oldest claimable records")
        #expect(afterProbe.first == Array(ids.prefix(5)))
        #expect(afterProbe.dropFirst().allSatisfy { $0.count <= 5 }, "then the rest, a request at a time")
        #expect(afterProbe.reduce(0) { $0 + $1.count } == 60, "each once: the probe's were acked")
        let delivered = sink.accepted.withLock { $0 }
        #expect(delivered.map(\.id).sorted() == ids)
        var lastByUser: [String: Int64] = [:]
        for record in delivered {
            #expect(lastByUser[record.userKey].map { $0 < record.id } ?? true, "user order broken at \(record.id)")
            lastByUser[record.userKey] = record.id
        }
        #expect(delivered.allSatisfy { $0.attempts == 0 }, "the outage cost no attempt")
        await drainer.store.close()
    }

    @Test func aFailedProbeEndsThePassAndPushesTheNextProbeOut() async throws {
        try enqueue(events(20, users: 4), at: path)
        let sink = SwitchedSink()
        let clock = ManualClock()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 5), clock: clock)
        _ = try await drainer.drain()
        let firstProbe = try #require(drainer.availability.snapshot.nextProbeAtMilliseconds)
        clock.advance(toWallMilliseconds: firstProbe)
        let calls = sink.calls
        let summary = try await drainer.drain()
        #expect(sink.calls == calls + 1)
        #expect(summary.retried == 5)
        let next = try #require(drainer.availability.snapshot.nextProbeAtMilliseconds)
        #expect((10_000...12_500).contains(next - clock.wallMilliseconds()), "the second probe 10 s later")
        await drainer.store.close()
    }

    @Test func anOutageLongerThanEveryAttemptDeadLettersNothing() async throws {
        let ids = try enqueue(events(10, users: 2), at: path)
        let sink = SwitchedSink()
        let clock = ManualClock()
        // One attempt allowed: before issue 30, the first 500 made every record dead.
        let drainer = try makeDrainer(
            path, sink: sink, options: DrainOptions(batchSize: 5, maxAttempts: 1), clock: clock)
        for _ in 0..<30 {
            _ = try await drainer.drain()
            clock.advance(by: .seconds(61))  // an hour of outage, a probe a minute
        }
        #expect(try deadRecords(path).isEmpty)
        sink.down.withLock { $0 = false }
        clock.advance(by: .seconds(61))
        let summary = try await drainer.drain()
        #expect(summary.delivered == 10)
        // Each user in order; not the two users' records interleaved by age, since probes take turns among the
        // oldest request's users (issue 40 #2).
        let accepted = sink.accepted.withLock { $0 }
        #expect(Set(accepted.map(\.id)) == Set(ids))
        for user in Set(accepted.map(\.userKey)) {
            let ofUser = accepted.filter { $0.userKey == user }.map(\.id)
            #expect(ofUser == ofUser.sorted(), "\(user) in order")
        }
        await drainer.store.close()
    }
}
