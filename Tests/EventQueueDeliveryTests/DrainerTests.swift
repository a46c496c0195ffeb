import EventQueue
import Glibc
import Testing

@testable import EventQueueDelivery

@Suite(.timeLimit(.minutes(2)))
struct DrainerTests {
    let directory = Scratch()
    var path: String { directory.queuePath }

    // MARK: - A full pass

    @Test func deliversEverythingInIDOrderIncludingRecordsEnqueuedDuringThePass() async throws {
        let path = self.path
        let initial = try enqueue((0..<5).map { testEvent("first\($0)", user: "u\($0 % 2)") }, at: path)
        let late = Locked<[Int64]>([])
        let sink = ScriptedSink { call, batch in
            if call == 0 {
                // Another writer (its own connection) enqueues while the sink holds the first batch.
                do {
                    let ids = try enqueue((0..<3).map { testEvent("late\($0)", user: "u\($0 % 2)") }, at: path)
                    late.withLock { $0 = ids }
                } catch {
                    Issue.record(error, "enqueueing during the pass")
                }
            }
            return DeliveryReport(.delivered, for: batch)
        }
        let progress = Locked<[DrainSummary]>([])
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 2))
        let summary = try await drainer.drain(progress: { summary in progress.withLock { $0.append(summary) } })
        await drainer.store.close()

        let lateIDs = late.value
        #expect(lateIDs.count == 3)
        #expect(lateIDs.allSatisfy { $0 > (initial.max() ?? 0) })
        let everything = initial + lateIDs
        #expect(sink.ids == everything, "every record, once, in id order, late ones in the same pass")
        #expect(sink.batchIDs == stride(from: 0, to: 8, by: 2).map { Array(everything[$0..<$0 + 2]) })
        #expect(sink.records.allSatisfy { $0.attempts == 0 && $0.kind == .event })
        #expect(
            sink.records.map { $0.object["name"] }
                == (0..<5).map { JSONValue.string("first\($0)") } + (0..<3).map { .string("late\($0)") })

        #expect(summary.delivered == 8)
        #expect(summary.retried == 0)
        #expect(summary.dead == 0)
        #expect(summary.batches == 4)
        #expect(summary.halt == nil)
        #expect(summary.remaining?.pending == 0)
        #expect(summary.remaining?.leased == 0)
        #expect(summary.remaining?.dead == 0)
        #expect(summary.result == .allDelivered)
        #expect(summary.result == .allDelivered)
        #expect(progress.value.map(\.delivered) == [2, 4, 6, 8], "progress is reported after every batch")
        #expect(progress.value.map(\.batches) == [1, 2, 3, 4])

        let stats = try inspect(path) { try $0.admin.stats() }
        #expect(stats.pending == 0 && stats.leased == 0 && stats.dead == 0)
        #expect(try liveRecords(path).isEmpty)
    }

    // MARK: - Per-record outcomes

    /// Batches whose records are not all delivered are settled at once (no ack waits for the next claim); the
    /// progress of such a batch is reported right after it, like that of any other batch.
    @Test func progressIsReportedAfterEveryBatchWhateverItsOutcomes() async throws {
        _ = try enqueue((0..<6).map { testEvent("e\($0)", user: "u\($0)") }, at: path)
        // Batch 0: one delivered, one retried. Batch 1: both rejected. Batch 2: both delivered.
        let sink = ScriptedSink { call, record in
            switch call {
            case 0: record.id % 2 == 1 ? .delivered : .retry(reason: "503", afterMilliseconds: 60_000, cause: .record)
            case 1: .rejected(reason: "poison")
            default: .delivered
            }
        }
        let progress = Locked<[DrainSummary]>([])
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 2))
        let summary = try await drainer.drain(progress: { summary in progress.withLock { $0.append(summary) } })
        await drainer.store.close()
        #expect(summary.batches == 3 && summary.delivered == 3 && summary.retried == 1 && summary.dead == 2)
        #expect(progress.value.map(\.batches) == [1, 2, 3])
        #expect(progress.value.map(\.delivered) == [1, 1, 3])
        #expect(progress.value.map(\.dead) == [0, 2, 2])
    }

    @Test func partialOutcomesSettleEachRecordOnItsOwn() async throws {
        let ids = try enqueue((0..<6).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        let sink = ScriptedSink { _, record -> DeliveryOutcome? in
            switch record.id {
            case ids[0], ids[5]: return .delivered
            case ids[1]: return .rejected(reason: "HTTP 400: external_id is invalid")
            case ids[2]: return .retry(reason: "the destination could not take it yet", cause: .record)
            case ids[3]: return .retry(reason: "HTTP 429", afterMilliseconds: 30_000, cause: .backPressure)
            default: return nil  // ids[4]: no outcome at all, every time
            }
        }
        let backoff = Backoff()  // 1 s ceiling for a first retry
        // The clock stands still during the pass: every time written is `now`-based exactly, and a retry that drew
        // a 1 ms backoff is not due again within the pass.
        let clock = ManualClock()
        let now = clock.wallMilliseconds()
        let drainer = try makeDrainer(
            path, sink: sink, options: DrainOptions(batchSize: 10, backoff: backoff), clock: clock)
        let summary = try await drainOnce(drainer)

        // ids[4] is due again at once (no outcome is no fault of the record's), so the pass sends it again until
        // three failures in a row make the sink unavailable.
        #expect(sink.batchIDs == [ids, [ids[4]], [ids[4]]])
        #expect(summary.delivered == 2)
        #expect(summary.dead == 1)
        #expect(summary.retried == 5)
        #expect(summary.batches == 3)
        #expect(summary.halt?.kind == .unavailable)
        #expect(summary.result == .someDead)
        #expect(summary.result == .someDead)
        #expect(summary.remaining?.pending == 3)
        #expect(summary.remaining?.leased == 0)
        #expect(summary.remaining?.dead == 1)

        let dead = try deadRecords(path)
        #expect(dead.keys.sorted() == [ids[1]])
        #expect(dead[ids[1]]?.lastError == "HTTP 400: external_id is invalid")
        #expect(dead[ids[1]]?.state == .dead)
        #expect(dead[ids[1]]?.deadAtMilliseconds == now)

        let live = try liveRecords(path)
        #expect(live.keys.sorted() == [ids[2], ids[3], ids[4]], "delivered records are deleted")
        for id in [ids[2], ids[3], ids[4]] { #expect(live[id]?.state == .pending) }
        #expect(live[ids[2]]?.attempts == 1, "the record's own failure counts")
        #expect(live[ids[3]]?.attempts == 0, "back-pressure does not")
        #expect(live[ids[4]]?.attempts == 0, "nor does the destination's failure")
        #expect(live[ids[2]]?.lastError == "the destination could not take it yet")
        #expect(live[ids[3]]?.lastError == "HTTP 429")
        #expect(live[ids[4]]?.lastError == "the sink reported no outcome")
        // The record's own failure backs off: in the future, within the ceiling for a first retry.
        let next = try #require(live[ids[2]]?.nextAttemptAtMilliseconds)
        #expect((now + 1...now + backoff.ceiling(attempt: 1)).contains(next), "next attempt \(next - now) ms out")
        // The destination's failure does not: due at once; the sink's availability decides when it goes.
        #expect(live[ids[4]]?.nextAttemptAtMilliseconds == now)
        // The sink's own hint wins over the backoff.
        #expect(live[ids[3]]?.nextAttemptAtMilliseconds == now + 30_000)
    }

    @Test func retriesWithoutDeadLettersLeaveRecordsRemaining() async throws {
        let ids = try enqueue((0..<4).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        let sink = ScriptedSink { _, record in
            record.id.isMultiple(of: 2)
                ? .delivered : .retry(reason: "try this one later", afterMilliseconds: 60_000, cause: .record)
        }
        let summary = try await drainOnce(try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 10)))
        #expect(sink.batchIDs == [ids], "retried records are not due again within the pass")
        #expect(summary.delivered == 2)
        #expect(summary.retried == 2)
        #expect(summary.dead == 0)
        #expect(summary.halt == nil)
        #expect(summary.remaining?.pending == 2)
        #expect(summary.remaining?.nextRetryAtMilliseconds != nil)
        #expect(summary.result == .recordsRemain)
        #expect(summary.result == .recordsRemain)
        #expect(try liveRecords(path).keys.sorted() == ids.filter { !$0.isMultiple(of: 2) })
    }

    // MARK: - Attempts

    @Test func retriesUntilDeadAfterExactlyMaxAttempts() async throws {
        let id = try #require(try enqueue([testEvent("flaky", user: "u")], at: path).first)
        let sink = ScriptedSink { _, _ in .retry(reason: "the destination refused it for now", cause: .record) }
        let options = DrainOptions(maxAttempts: 3)  // the default backoff: retry n within 2^(n-1) s
        let clock = ManualClock()
        let drainer = try makeDrainer(path, sink: sink, options: options, clock: clock)
        var summaries: [DrainSummary] = []
        for attempt in 1...3 {
            summaries.append(try await drainer.drain())
            // The retry is due within the backoff's ceiling: move the clock there instead of sleeping.
            clock.advance(by: .milliseconds(options.backoff.ceiling(attempt: attempt)))
        }
        let afterDeath = try await drainer.drain()
        await drainer.store.close()

        #expect(sink.ids == [id, id, id], "handed to the sink exactly three times")
        #expect(sink.records.map(\.attempts) == [0, 1, 2], "the sink sees the failed attempts before this one")
        let dead = try #require(try deadRecords(path)[id])
        #expect(dead.attempts == 3)
        #expect(dead.lastError == "gave up after 3 attempts: the destination refused it for now")
        #expect(summaries.map(\.dead) == [0, 0, 1], "one pass per attempt, each finding its retry due")
        #expect(summaries.map(\.retried) == [1, 1, 0])
        #expect(summaries.map(\.result) == [.recordsRemain, .recordsRemain, .someDead])
        #expect(afterDeath.batches == 0, "a dead letter is never claimed again")
        #expect(sink.callCount == 3)
        #expect(try liveRecords(path).isEmpty)
    }

    @Test func rateLimitsNeverUseUpAttempts() async throws {
        let id = try #require(try enqueue([testEvent("popular", user: "u")], at: path).first)
        let sink = ScriptedSink { call, _ in
            call < 5 ? .retry(reason: "HTTP 429", afterMilliseconds: 1, cause: .backPressure) : .delivered
        }
        // Two attempts would kill the record if rate limits counted; and with the sink unavailable after one
        // failure, a rate-limited batch must not count as one (back-pressure, issue 20): each pass ends only
        // because the record is not due yet.
        let options = DrainOptions(
            maxAttempts: 2, availability: SinkAvailability.Policy(failuresBeforeUnavailable: 1))
        let clock = ManualClock()
        let drainer = try makeDrainer(path, sink: sink, options: options, clock: clock)
        let first = try await drainer.drain()
        let record = try #require(try liveRecords(path)[id])
        #expect(record.attempts == 0)
        #expect(record.lastError == "HTTP 429")
        #expect(first.result == .recordsRemain)
        #expect(first.halt == nil, "a rate limit is not a failed batch: \(String(describing: first.halt))")
        var summaries = [first]
        for _ in 1..<6 {
            // The hint is 1 ms: the retry is due once the clock has moved that far, not within the pass.
            clock.advance(by: .milliseconds(1))
            summaries.append(try await drainer.drain())
        }
        await drainer.store.close()

        #expect(sink.ids == Array(repeating: id, count: 6))
        #expect(sink.records.allSatisfy { $0.attempts == 0 })
        #expect(summaries.map(\.dead) == [0, 0, 0, 0, 0, 0])
        #expect(summaries.map(\.retried) == [1, 1, 1, 1, 1, 0])
        #expect(summaries.map(\.delivered) == [0, 0, 0, 0, 0, 1])
        #expect(try deadRecords(path).isEmpty)
        #expect(try liveRecords(path).isEmpty)
    }

    // MARK: - Halts

    @Test func configurationHaltReleasesTheBatchAndStopsThePass() async throws {
        let ids = try enqueue((0..<5).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        let halt = SinkHalt(kind: .configuration, reason: "HTTP 401: invalid API key")
        let sink = ScriptedSink { _, _ in DeliveryReport(halt: halt) }
        let summary = try await drainOnce(try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 2)))

        #expect(sink.batchIDs == [Array(ids.prefix(2))], "the pass stops after the batch that halted")
        #expect(summary.batches == 1)
        #expect(summary.delivered == 0)
        #expect(summary.retried == 0)
        #expect(summary.dead == 0)
        #expect(summary.halt == halt)
        #expect(summary.result == .sinkMisconfigured)
        #expect(summary.result == .sinkMisconfigured)
        #expect(summary.remaining?.pending == 5)
        #expect(summary.remaining?.leased == 0)

        let live = try liveRecords(path)
        #expect(live.keys.sorted() == ids)
        for record in live.values {
            #expect(record.state == .pending)
            #expect(record.attempts == 0, "a misconfigured sink is not the record's fault")
            #expect(record.nextAttemptAtMilliseconds == 0)
        }
        // Released, not backed off: claimable again at once.
        let reclaimed = try inspect(path) { try $0.claim(limit: 10, leaseMilliseconds: 1_000) }
        #expect(reclaimed.records.map(\.id) == ids)
    }

    @Test func aSinkThatDeclaresItselfDownIsUnavailableAtOnceAndCostsNoAttempt() async throws {
        let ids = try enqueue((0..<5).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        let halt = SinkHalt(kind: .unavailable, reason: "connection refused")
        let sink = ScriptedSink { _, _ in DeliveryReport(halt: halt) }
        let clock = ManualClock()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 2), clock: clock)
        let summary = try await drainOnce(drainer)

        #expect(sink.batchIDs == [Array(ids.prefix(2))])
        #expect(summary.halt == halt)
        #expect(summary.retried == 2)
        #expect(summary.result == .recordsRemain)
        #expect(drainer.availability.snapshot.state == .unavailable)
        let live = try liveRecords(path)
        for id in ids.prefix(2) {
            #expect(live[id]?.attempts == 0)
            #expect(live[id]?.lastError == "connection refused")
            #expect(live[id]?.nextAttemptAtMilliseconds == clock.wallMilliseconds(), "no backoff of its own")
        }
        for id in ids.dropFirst(2) {
            #expect(live[id]?.attempts == 0)
            #expect(live[id]?.lastError == nil)
        }
    }

    /// Issue 30, point 1: an outage never uses up attempts, however long; points 2: a few failures in a row stop
    /// the pass, and the rest of the backlog is never sent into the outage.
    @Test func destinationFailuresNeverCountAndAFewInARowMakeTheSinkUnavailable() async throws {
        let ids = try enqueue((0..<10).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        let sink = ScriptedSink { _, _ in .retry(reason: "connection refused", cause: .destination) }
        let clock = ManualClock()
        let options = DrainOptions(batchSize: 2, maxAttempts: 1)
        let drainer = try makeDrainer(path, sink: sink, options: options, clock: clock)
        let summary = try await drainOnce(drainer)

        // Due again at once, the oldest records are claimed again: three tries of the same batch, then the pass
        // stops; the other eight records are never claimed.
        #expect(sink.batchIDs == [[ids[0], ids[1]], [ids[0], ids[1]], [ids[0], ids[1]]])
        #expect(summary.batches == 3)
        #expect(summary.retried == 6)
        #expect(summary.dead == 0, "one attempt allowed, three failures: none counted")
        #expect(summary.halt?.kind == .unavailable)
        #expect(summary.halt?.reason.contains("connection refused") == true, "\(String(describing: summary.halt))")
        #expect(summary.result == .recordsRemain)
        let state = drainer.availability.snapshot
        #expect(state.state == .unavailable)
        #expect(state.lastError == "connection refused")
        #expect(
            state.nextProbeAtMilliseconds.map { $0 - clock.wallMilliseconds() }.map { (5_000...6_250).contains($0) }
                == true)

        let live = try liveRecords(path)
        #expect(live.count == 10)
        #expect(live.values.allSatisfy { $0.attempts == 0 && $0.state == .pending })
        #expect(try deadRecords(path).isEmpty)
    }

    @Test func anAnswerResetsTheFailureCount() async throws {
        let ids = try enqueue((0..<12).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        // Two failures, then an answer, and again: never three in a row.
        let sink = ScriptedSink { call, _ in
            call % 3 == 2 ? .delivered : .retry(reason: "flaky", cause: .destination)
        }
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 2))
        let summary = try await drainOnce(drainer)
        #expect(summary.halt == nil)
        #expect(summary.batches == 18)
        #expect(summary.delivered == 12)
        #expect(summary.retried == 24)
        #expect(
            sink.batchIDs.enumerated().allSatisfy {
                $0.element == Array(ids[$0.offset / 3 * 2..<$0.offset / 3 * 2 + 2])
            })
        #expect(drainer.availability.snapshot.state == .available)
    }

    @Test func shouldStopEndsThePassBeforeTheNextClaim() async throws {
        let ids = try enqueue((0..<6).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        let sink = ScriptedSink.acceptingEverything()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 2))
        let summary = try await drainOnce(drainer, shouldStop: { sink.callCount >= 1 })
        #expect(sink.batchIDs == [Array(ids.prefix(2))], "the batch in flight finishes, no new one is claimed")
        #expect(summary.delivered == 2)
        #expect(summary.remaining?.pending == 4)
        #expect(summary.remaining?.leased == 0)
        #expect(summary.result == .recordsRemain)
        #expect(try liveRecords(path).keys.sorted() == Array(ids.dropFirst(2)))
    }

    // MARK: - Leases

    /// The sink holds its batch while the test moves the clock past the lease three times over: each time a third
    /// of the lease has passed, the delivery renews it, so a rival claiming after the original expiry finds nothing.
    @Test func leaseIsRenewedWhileASlowSinkWorks() async throws {
        let ids = try enqueue((0..<3).map { testEvent("slow\($0)", user: "user\($0)") }, at: path)
        let entered = Signal()
        let proceed = Signal()
        let sink = ScriptedSink.holding(entered: entered, until: proceed)
        let clock = ManualClock()
        let claimedAt = clock.wallMilliseconds()
        let options = DrainOptions(batchSize: 10, leaseMilliseconds: 1_000)
        let drainer = try makeDrainer(path, sink: sink, options: options, clock: clock)
        async let drained = drainOnce(drainer)

        await entered.wait()
        await clock.waitForSleepers(1)  // the renewal loop waits a third of the lease
        let rival = try QueueConsumer(path: path)
        for round in Int64(1)...3 {
            clock.advance(by: .milliseconds(400))
            // Back to sleep: the renewal of this round is written.
            await clock.waitForSleepers(1)
            // After the claim's own expiry (claimedAt + 1 000), before the renewed one (now + 1 000).
            let probe = claimedAt + 400 * round + 900
            let stolen = try rival.claim(limit: 10, leaseMilliseconds: 60_000, now: probe)
            #expect(
                stolen.records.isEmpty,
                "round \(round): claimed \(stolen.records.map(\.id)) at +\(probe - claimedAt) ms")
            #expect(try rival.admin.stats(now: probe).leased == 3, "round \(round)")
        }
        rival.close()
        proceed.fire()
        let summary = try await drained

        #expect(sink.batchIDs == [ids])
        #expect(summary.delivered == 3, "every record delivered (acked under the drainer's lease) exactly once")
        #expect(summary.result == .allDelivered)
        #expect(try liveRecords(path).isEmpty)
    }

    // MARK: - Per-user order

    @Test func aUsersLaterRecordsWaitForItsRetry() async throws {
        let ids = try enqueue(
            [
                testEvent("a1", user: "A"), testEvent("b1", user: "B"), testEvent("a2", user: "A"),
                testEvent("b2", user: "B"), testEvent("a3", user: "A"),
            ], at: path)
        let userA = [ids[0], ids[2], ids[4]]
        let userB = [ids[1], ids[3]]
        let sink = ScriptedSink { _, record in
            record.id == userA[0] && record.attempts == 0
                ? .retry(reason: "refused for now", afterMilliseconds: 200, cause: .record) : .delivered
        }
        // Batches of 2, so A's first record and its later ones are never in the same batch: what is tested is
        // that the claims of the same pass skip A while A's first record waits for its retry.
        let options = DrainOptions(batchSize: 2)
        let clock = ManualClock()

        let first = try makeDrainer(path, sink: sink, options: options, clock: clock)
        let firstSummary = try await drainOnce(first)
        let firstPass = sink.batchIDs
        #expect(firstPass == [[userA[0], userB[0]], [userB[1]]])
        #expect(firstSummary.delivered == 2)
        #expect(firstSummary.retried == 1)
        let live = try liveRecords(path)
        #expect(live.keys.sorted() == userA)
        #expect(live[userA[0]]?.attempts == 1)
        #expect(live[userA[1]]?.attempts == 0 && live[userA[2]]?.attempts == 0)

        clock.advance(by: .milliseconds(200))  // A's retry comes due
        let second = try makeDrainer(path, sink: sink, options: options, clock: clock)
        let secondSummary = try await drainOnce(second)
        let secondPass = Array(sink.batchIDs.dropFirst(firstPass.count))
        #expect(secondPass.flatMap { $0 } == userA, "A's records, in id order, once its first is due")
        #expect(sink.records.last { $0.id == userA[0] }?.attempts == 1)
        #expect(secondSummary.delivered == 3)
        #expect(secondSummary.result == .allDelivered)
        #expect(try liveRecords(path).isEmpty)
    }

    // MARK: - Foreign writers

    @Test func foreignRecordsAreRevalidatedBeforeDelivery() async throws {
        let path = self.path
        try enqueue([testEvent("valid-before", user: "v1")], at: path)
        try SQLiteShell.insert(path, payload: #"{"external_id":"f1","name":""}"#)
        try SQLiteShell.insert(path, payload: #"{"external_id":"f2","name":"bad_props","properties":{"$bad":1}}"#)
        try SQLiteShell.insert(
            path, payload: #"{"external_id":"f3","name":"no_time","properties":{"k":"v"}}"#,
            createdAt: 1_700_000_000_123)
        try enqueue([testEvent("valid-after", user: "v2")], at: path)
        let ids = try liveRecords(path).keys.sorted()
        try #require(ids.count == 5)

        let sink = ScriptedSink.acceptingEverything()
        let summary = try await drainOnce(try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 10)))

        #expect(sink.ids == [ids[0], ids[3], ids[4]], "valid records around the invalid ones are delivered")
        #expect(summary.delivered == 3)
        #expect(summary.dead == 2)
        #expect(summary.result == .someDead)

        let dead = try deadRecords(path)
        #expect(dead.keys.sorted() == [ids[1], ids[2]])
        let emptyName = try #require(dead[ids[1]]?.lastError)
        #expect(emptyName.hasPrefix("rejected before delivery:"))
        #expect(emptyName.contains("name must be 1 to 255 characters"), "\(emptyName)")
        let dollar = try #require(dead[ids[2]]?.lastError)
        #expect(dollar.hasPrefix("rejected before delivery:"))
        #expect(dollar.contains("properties.$bad"), "\(dollar)")

        // No `time`: the record's created_at_ms, in ISO 8601, is sent as its time.
        let foreign = try #require(sink.records.first { $0.id == ids[3] })
        #expect(foreign.createdAtMilliseconds == 1_700_000_000_123)
        #expect(foreign.userKey == "external_id:f3")
        #expect(foreign.object["time"] == .string("2023-11-14T22:13:20.123Z"))
        #expect(
            foreign.object.serialized
                == #"{"external_id":"f3","name":"no_time","properties":{"k":"v"},"time":"2023-11-14T22:13:20.123Z"}"#)
    }

    // MARK: - Robustness

    /// A sink's retry hint is a plain `Int64`; one meaning "much later" must not crash the drain.
    @Test func aHugeRetryHintDoesNotCrashTheDrain() async {
        await #expect(processExitsWith: .success) {
            let directory = Scratch()
            let path = directory.queuePath
            try enqueue([testEvent("e", user: "u")], at: path)
            let sink = ScriptedSink { _, _ in
                .retry(reason: "retry much later", afterMilliseconds: .max, cause: .record)
            }
            let clock = ManualClock()
            let summary = try await drainOnce(try makeDrainer(path, sink: sink, clock: clock))
            // Parked, but not for good: the drainer keeps a hint within the clock horizon (15 minutes).
            let next = try liveRecords(path).values.first?.nextAttemptAtMilliseconds ?? 0
            let expected = clock.wallMilliseconds() + ClockHorizon.longestWaitMilliseconds
            if summary.retried != 1 || summary.dead != 0 || next != expected { exit(3) }
        }
    }

    // MARK: - One drainer per queue

    @Test func aSecondDrainerOnTheSameFileStandsAside() async throws {
        let ids = try enqueue((0..<3).map { testEvent("e\($0)", user: "user\($0)") }, at: path)
        let entered = Signal()
        let proceed = Signal()
        // Holds its batch (and so the drain lock) until the test has run the second drainer.
        let slow = ScriptedSink.holding(entered: entered, until: proceed)
        let first = try makeDrainer(path, sink: slow, options: DrainOptions(batchSize: 10))
        async let firstSummary = drainOnce(first)
        await entered.wait()

        let other = ScriptedSink.acceptingEverything()
        let second = try await drainOnce(try makeDrainer(path, sink: other))
        #expect(second.lockHolder != nil)
        #expect(second.result == .anotherDrainerRunning)
        #expect(second.result == .anotherDrainerRunning)
        #expect(second.batches == 0)
        #expect(other.callCount == 0, "the second drainer claimed nothing")

        proceed.fire()
        let summary = try await firstSummary
        #expect(slow.batchIDs == [ids])
        #expect(summary.delivered == 3)
        #expect(summary.result == .allDelivered)
        // The first pass released the lock: the next pass runs (and finds nothing to do).
        let next = try await drainOnce(try makeDrainer(path, sink: other))
        #expect(next.lockHolder == nil)
        #expect(next.result == .allDelivered)
    }
}
