import EventQueue
import Synchronization
import Testing

@testable import EventQueueDelivery

/// A sink that serves many deliveries at once and watches them: which users are in flight, how many batches at
/// once, and the order each user's records arrive in. Each batch waits for the test to let it go (`gate`), so
/// the batches are really in flight together.
final class ConcurrentWatchingSink: Sink {
    struct Watch: Sendable {
        var usersInFlight: [String: Int] = [:]
        var overlaps = 0
        var inFlight = 0
        var maxInFlight = 0
        var delivered: [Int64] = []
        var calls = 0
    }

    let name = "watching"
    let maxConcurrentDeliveries: Int
    let recordsPerRequest: Int?
    let watch = Mutex(Watch())
    /// Decides each record's outcome; `call` counts deliveries from 0.
    let outcome: @Sendable (_ call: Int, _ record: OutgoingRecord) -> DeliveryOutcome
    let delay: Duration

    init(
        maxConcurrentDeliveries: Int, recordsPerRequest: Int?, delay: Duration = .milliseconds(20),
        outcome: @escaping @Sendable (Int, OutgoingRecord) -> DeliveryOutcome = { _, _ in .delivered }
    ) {
        self.maxConcurrentDeliveries = maxConcurrentDeliveries
        self.recordsPerRequest = recordsPerRequest
        self.delay = delay
        self.outcome = outcome
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
        // A round trip: the other deliveries run meanwhile.
        try? await Task.sleep(for: delay)
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
        let sink = ConcurrentWatchingSink(maxConcurrentDeliveries: 64, recordsPerRequest: 25)
        let progress = Locked<[DrainSummary]>([])
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 25, maxInFlight: 8))
        let summary = try await drainer.drain(progress: { summary in progress.withLock { $0.append(summary) } })
        await drainer.store.close()

        let watch = sink.watch.withLock { $0 }
        #expect(summary.delivered == 1_200)
        #expect(summary.result == .allDelivered)
        #expect(watch.overlaps == 0, "a user was in two deliveries at once")
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
        // Progress once per settled batch, with records in flight while others run.
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
                return .retry(reason: "try again", afterMilliseconds: 1)
            }
            return .delivered
        }
        var options = DrainOptions(batchSize: 10, maxInFlight: 4)
        options.backoff = Backoff(baseMilliseconds: 1, capMilliseconds: 1)
        let drainer = try makeDrainer(path, sink: sink, options: options)
        var delivered = 0
        // The retry comes due 1 ms later; a pass or two more deliver the rest of u0.
        for _ in 0..<20 where delivered < 300 {
            delivered += try await drainer.drain().delivered
            try await Task.sleep(for: .milliseconds(2))
        }
        await drainer.store.close()
        let watch = sink.watch.withLock { $0 }
        #expect(delivered == 300)
        #expect(watch.overlaps == 0)
        let u0 = watch.delivered.filter { (ids.firstIndex(of: $0) ?? 1) % 10 == 0 }
        #expect(u0 == u0.sorted(), "u0 delivered out of order: \(u0.prefix(5))")
        #expect(u0.first == first)
    }

    @Test func claimsAreWholeRequestsWhenSeveralBatchesAreInFlight() async throws {
        let sink = ConcurrentWatchingSink(maxConcurrentDeliveries: 16, recordsPerRequest: 75)
        let store = try QueueStore(path: path)
        #expect(
            Drainer(
                store: store, sink: sink, options: DrainOptions(batchSize: 100, maxInFlight: 16), logger: quietLogger
            ).claimSize == 75)
        #expect(
            Drainer(
                store: store, sink: sink, options: DrainOptions(batchSize: 300, maxInFlight: 16), logger: quietLogger
            ).claimSize == 300)
        #expect(
            Drainer(
                store: store, sink: sink, options: DrainOptions(batchSize: 10, maxInFlight: 16), logger: quietLogger
            ).claimSize == 10)
        // One at a time: the batch size as given.
        #expect(
            Drainer(
                store: store, sink: sink, options: DrainOptions(batchSize: 100, maxInFlight: 1), logger: quietLogger
            ).claimSize == 100)
        // A file sink takes one batch at a time whatever --max-in-flight says.
        let file = ScriptedSink.acceptingEverything()
        #expect(
            Drainer(
                store: store, sink: file, options: DrainOptions(batchSize: 100, maxInFlight: 16), logger: quietLogger
            ).effectiveMaxInFlight == 1)
        await store.close()
    }
}
