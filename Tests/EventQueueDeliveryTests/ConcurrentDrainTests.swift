import EventQueue
import Synchronization
import Testing

@testable import EventQueueDelivery

/// A sink that serves many deliveries at once and watches them: which users are in flight, how many batches at
/// once, and the order each user's records arrive in. With `holdFirstUntilSecond`, the first delivery waits
/// until a second one has started, so two batches are in flight together by construction (no timing involved).
final class ConcurrentWatchingSink: Sink {
    struct Watch: Sendable {
        var usersInFlight: [String: Int] = [:]
        var overlaps = 0
        var inFlight = 0
        var maxInFlight = 0
        var delivered: [Int64] = []
        var calls = 0
        /// The first delivery saw a second start while it was held.
        var secondStartedDuringFirst = false
    }

    let name = "watching"
    let maxConcurrentDeliveries: Int
    let recordsPerRequest: Int?
    let watch = Mutex(Watch())
    /// Decides each record's outcome; `call` counts deliveries from 0.
    let outcome: @Sendable (_ call: Int, _ record: OutgoingRecord) -> DeliveryOutcome
    let holdFirstUntilSecond: Bool
    /// When given, the first delivery also waits for this (after the second started): the test fires it from the
    /// progress callback, so a batch is still in flight when another one's progress is reported, by construction.
    let releaseFirst: Signal?
    private let secondStarted = Signal()

    init(
        maxConcurrentDeliveries: Int, recordsPerRequest: Int?, holdFirstUntilSecond: Bool = false,
        releaseFirst: Signal? = nil,
        outcome: @escaping @Sendable (Int, OutgoingRecord) -> DeliveryOutcome = { _, _ in .delivered }
    ) {
        self.maxConcurrentDeliveries = maxConcurrentDeliveries
        self.recordsPerRequest = recordsPerRequest
        self.holdFirstUntilSecond = holdFirstUntilSecond
        self.releaseFirst = releaseFirst
        self.outcome = outcome
    }

    /// Holds the first delivery until the second starts; a drainer that never opens a second delivery gets it
    /// back after 30 s (a guard against hanging the suite, not a synchronisation: the test then fails).
    private func holdUntilSecondStarts() async {
        let started = secondStarted
        let arrived = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await started.wait()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        watch.withLock { $0.secondStartedDuringFirst = arrived }
    }

    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        let users = Set(batch.map(\.userKey))
        let call = watch.withLock { watch in
            for user in users {
                if watch.usersInFlight[user, default: 0] > 0 { watch.overlaps += 1 }
                watch.usersInFlight[user, default: 0] += 1
            }
            watch.inFlight += 1
            watch.maxInFlight = max(watch.maxInFlight, watch.inFlight)
            watch.calls += 1
            return watch.calls - 1
        }
        if holdFirstUntilSecond {
            if call == 0 { await holdUntilSecondStarts() }
            if call == 1 { secondStarted.fire() }
        }
        if call == 0, let releaseFirst { await releaseFirst.wait() }
        var outcomes: [Int64: DeliveryOutcome] = [:]
        for record in batch { outcomes[record.id] = outcome(call, record) }
        watch.withLock { watch in
            for user in users { watch.usersInFlight[user, default: 1] -= 1 }
            watch.inFlight -= 1
            watch.delivered += batch.filter { outcomes[$0.id] == .delivered }.map(\.id)
        }
        return DeliveryReport(outcomes: outcomes)
    }
}

@Suite(.timeLimit(.minutes(2)))
struct ConcurrentDrainTests {
    let directory = Scratch()
    var path: String { directory.queuePath }

    @Test func severalBatchesAreInFlightAtOnceWithoutAUserInTwoAndEachUserInOrder() async throws {
        let records = (0..<1_200).map { testEvent("e\($0)", user: "u\($0 % 40)") }
        let ids = try enqueue(records, at: path)
        let progressReported = Signal()
        let sink = ConcurrentWatchingSink(
            maxConcurrentDeliveries: 64, recordsPerRequest: 25, holdFirstUntilSecond: true,
            releaseFirst: progressReported)
        let progress = Locked<[DrainSummary]>([])
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 25, maxInFlight: 8))
        let summary = try await drainer.drain(progress: { summary in
            progress.withLock { $0.append(summary) }
            progressReported.fire()
        })
        await drainer.store.close()

        let watch = sink.watch.withLock { $0 }
        #expect(summary.delivered == 1_200)
        #expect(summary.result == .allDelivered)
        #expect(watch.overlaps == 0, "a user was in two deliveries at once")
        #expect(watch.secondStartedDuringFirst, "the drainer did not open a second delivery while the first ran")
        #expect(watch.maxInFlight > 1, "the deliveries never overlapped: \(watch.maxInFlight)")
        #expect(watch.maxInFlight <= 8)
        #expect(Set(watch.delivered) == Set(ids))
        // Each user's records arrive in id order.
        let userOf = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($0.element, "u\($0.offset % 40)") })
        var lastOfUser: [String: Int64] = [:]
        for id in watch.delivered {
            let user = userOf[id] ?? ""
            #expect((lastOfUser[user] ?? 0) < id, "user \(user) out of order at \(id)")
            lastOfUser[user] = id
        }
        // Progress once per settled batch, with records in flight while others run (the first batch is held until
        // a progress report, so at least that report counts it).
        #expect(progress.value.count == summary.batches)
        #expect(progress.value.contains { $0.inFlight > 0 })
        #expect(try liveRecords(path).isEmpty)
    }

    @Test func aRecordWaitingForARetryHoldsBackItsUsersLaterRecordsAcrossConcurrentBatches() async throws {
        // u0's first record fails once; its later records must not be delivered before it, although other
        // batches keep going around it.
        let records = (0..<300).map { testEvent("e\($0)", user: "u\($0 % 10)") }
        let ids = try enqueue(records, at: path)
        let first = ids[0]
        let failed = Locked(false)
        let sink = ConcurrentWatchingSink(maxConcurrentDeliveries: 16, recordsPerRequest: 10) { _, record in
            if record.id == first,
                failed.withLock({ done in
                    defer { done = true }; return !done
                })
            {
                return .retry(reason: "try again", afterMilliseconds: 1, cause: .record)
            }
            return .delivered
        }
        let clock = ManualClock()
        let drainer = try makeDrainer(
            path, sink: sink, options: DrainOptions(batchSize: 10, maxInFlight: 4), clock: clock)
        // The clock stands still during a pass: u0's retry is not due within it, and u0's later records wait.
        let firstPass = try await drainer.drain()
        clock.advance(by: .milliseconds(1))  // the retry comes due
        let secondPass = try await drainer.drain()
        await drainer.store.close()
        let watch = sink.watch.withLock { $0 }
        #expect(firstPass.delivered == 270, "every user but u0")
        #expect(firstPass.retried == 1)
        #expect(secondPass.delivered == 30, "u0's first record, then the 29 that waited for it")
        #expect(watch.overlaps == 0)
        let u0 = watch.delivered.filter { (ids.firstIndex(of: $0) ?? 1) % 10 == 0 }
        #expect(u0 == u0.sorted(), "u0 delivered out of order: \(u0.prefix(5))")
        #expect(u0.first == first)
    }

    @Test func claimsAreWholeRequestsWhenSeveralBatchesAreInFlight() async throws {
        let sink = ConcurrentWatchingSink(maxConcurrentDeliveries: 16, recordsPerRequest: 75)
        let store = try QueueStore(path: path)
        func drainer(_ sink: any Sink, batchSize: Int, maxInFlight: Int) -> Drainer {
            Drainer(
                store: store, sink: sink, options: DrainOptions(batchSize: batchSize, maxInFlight: maxInFlight),
                logger: quietLogger)
        }
        #expect(drainer(sink, batchSize: 100, maxInFlight: 16).claimSize == 75)
        #expect(drainer(sink, batchSize: 300, maxInFlight: 16).claimSize == 300)
        #expect(drainer(sink, batchSize: 10, maxInFlight: 16).claimSize == 10)
        // One at a time: the batch size as given.
        #expect(drainer(sink, batchSize: 100, maxInFlight: 1).claimSize == 100)
        // A file sink takes one batch at a time whatever --max-in-flight says.
        #expect(drainer(ScriptedSink.acceptingEverything(), batchSize: 100, maxInFlight: 16).effectiveMaxInFlight == 1)
        await store.close()
    }
}
