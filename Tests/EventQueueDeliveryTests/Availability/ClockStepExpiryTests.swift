import EventQueue
import Synchronization
import Testing

@testable import EventQueueDelivery

/// Issue 39 #2: a record's age for the max age cannot be made larger by a clock. The daemon's wall clock stepped 8
/// days forward (or back) for 4 seconds while the sink was down expired all 300 pending records at the pass the
/// step launched, and a writer 8 days behind had its record expired at the next pass. Now the age is measured on
/// the queue clock (`QueueAdmin.tickQueueClock`), which only the monotonic side of the injected clock moves.
@Suite(.timeLimit(.minutes(2)))
struct ClockStepExpiryTests {
    let directory = Scratch()
    var path: String { directory.queuePath }

    static let day: Int64 = 24 * 3_600_000

    func events(_ count: Int, users: Int, from first: Int = 0) -> [Record] {
        (first..<first + count).map { testEvent("e\($0)", user: "u\($0 % users)") }
    }

    func expired() throws -> Int64 { try inspect(path) { try $0.admin.drops().expired } }

    /// Brings the sink back and runs the pass a launch would: every record of `ids` is delivered, once, and nothing
    /// else.
    func recover(
        _ drainer: Drainer, _ sink: DrainerOutageTests.SwitchedSink, clock: ManualClock, ids: [Int64]
    ) async throws {
        sink.down.withLock { $0 = false }
        clock.advance(by: .seconds(10))  // a launch probes at once, but not within 5 s of the last probe
        drainer.availability.requestProbe()
        let summary = try await drainer.drain()
        #expect(summary.result == .allDelivered, "\(summary)")
        #expect(sink.accepted.withLock { $0.map(\.id) }.sorted() == ids.sorted())
    }

    @Test(arguments: [8 * day, -8 * day])
    func aStepOfTheDaemonsWallClockWhileTheSinkIsDownExpiresNothing(step: Int64) async throws {
        var ids = try enqueue(events(300, users: 30), at: path)
        let clock = ManualClock()
        try inspect(path) { try $0.admin.recordLimits(.daemonDefault, now: clock.wallMilliseconds()) }
        let sink = DrainerOutageTests.SwitchedSink()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 50), clock: clock)
        _ = try await drainer.drain()
        #expect(drainer.availability.snapshot.state == .unavailable)

        // The step, for 4 seconds: the step watcher's launch (a probe, as `LaunchCoordinator.launch` asks for)
        // runs a pass under it, and a writer on the host enqueues records dated by the stepped clock.
        clock.advance(by: .seconds(10))
        clock.stepWall(by: step)
        drainer.availability.requestProbe()
        _ = try await drainer.drain()
        let writer = try QueueWriter(path: path)
        ids.append(
            contentsOf: try events(10, users: 5, from: 300).map {
                try writer.enqueue(QueueWriter.encode($0, now: clock.wallMilliseconds()))
            })
        writer.close()
        #expect(try expired() == 0, "the pass under the stepped clock expired records")
        clock.advance(by: .seconds(4))
        clock.stepWall(by: -step)
        _ = try await drainer.drain()
        clock.advance(by: .seconds(60))
        _ = try await drainer.drain()
        #expect(try expired() == 0, "a pass after the clock came back expired records")
        #expect(try deadRecords(path).isEmpty)

        try await recover(drainer, sink, clock: clock, ids: ids)
        await drainer.store.close()
    }

    @Test func aRecordFromAWriterEightDaysBehindIsNotExpiredAtTheNextPass() async throws {
        let clock = ManualClock()
        let writer = try QueueWriter(path: path)
        let ids = try [
            writer.enqueue(
                QueueWriter.encode(testEvent("behind", user: "u1"), now: clock.wallMilliseconds() - 8 * Self.day)),
            writer.enqueue(QueueWriter.encode(testEvent("right", user: "u2"), now: clock.wallMilliseconds())),
        ]
        writer.close()
        try inspect(path) { try $0.admin.recordLimits(.daemonDefault, now: clock.wallMilliseconds()) }
        let sink = DrainerOutageTests.SwitchedSink()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 50), clock: clock)
        _ = try await drainer.drain()
        clock.advance(by: .seconds(60))
        _ = try await drainer.drain()
        #expect(try expired() == 0, "the record dated by a clock 8 days behind was expired")

        try await recover(drainer, sink, clock: clock, ids: ids)
        await drainer.store.close()
    }

    /// What truly waited longer than the max age (by the monotonic clock) expires within a pass of it; what did
    /// not, does not.
    @Test func aRecordThatWaitedLongerThanTheMaxAgeExpiresWithinAPass() async throws {
        let clock = ManualClock()
        let old = try enqueue(events(5, users: 5), at: path)
        try inspect(path) {
            try $0.admin.recordLimits(QueueLimits(maxAgeSeconds: 3_600), now: clock.wallMilliseconds())
        }
        let sink = DrainerOutageTests.SwitchedSink()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 50), clock: clock)
        _ = try await drainer.drain()
        clock.advance(by: .seconds(30 * 60))
        let young = try enqueue(events(3, users: 3, from: 5), at: path)
        _ = try await drainer.drain()
        clock.advance(by: .seconds(29 * 60))
        _ = try await drainer.drain()
        #expect(try expired() == 0, "nothing has waited an hour yet")

        clock.advance(by: .seconds(2 * 60))
        _ = try await drainer.drain()
        let dead = try deadRecords(path)
        #expect(Set(dead.keys) == Set(old), "the records that waited an hour, and only those")
        #expect(dead.values.allSatisfy { $0.lastError?.hasPrefix("expired: enqueued at least 36") == true })
        #expect(try expired() == 5)

        try await recover(drainer, sink, clock: clock, ids: young)
        await drainer.store.close()
    }
}
