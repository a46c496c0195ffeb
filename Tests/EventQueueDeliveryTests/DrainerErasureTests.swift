import EventQueue
import Foundation
import Synchronization
import Testing

@testable import EventQueueDelivery

/// Erasures in the drain loop (issue 31): routed to `Sink.erase`, after every earlier record of the user and
/// before any later one, held back while a delivery of the user's forgotten records is in flight, retried and
/// dead-lettered like records.
@Suite(.timeLimit(.minutes(2)))
struct DrainerErasureTests {
    let directory = Scratch()
    var path: String { directory.queuePath }

    /// A sink that logs every call (`deliver` entered and returned, `erase` entered) in order, holds the batches
    /// of users named in `holding` until their signal fires, and answers erasures with `eraseOutcome`.
    final class LoggingSink: Sink {
        let name = "logging"
        let maxConcurrentDeliveries: Int
        let log = Mutex<[String]>([])
        let holding: [String: Signal]
        let entered: [String: Signal]
        let eraseOutcome: @Sendable (_ call: Int) -> DeliveryOutcome
        private let eraseCalls = Mutex(0)

        init(
            concurrency: Int = 1, holding: [String: Signal] = [:], entered: [String: Signal] = [:],
            eraseOutcome: @escaping @Sendable (Int) -> DeliveryOutcome = { _ in .delivered }
        ) {
            maxConcurrentDeliveries = concurrency
            self.holding = holding
            self.entered = entered
            self.eraseOutcome = eraseOutcome
        }

        func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
            let users = batch.map { $0.userKey.replacing("external_id:", with: "") }
            let names = batch.compactMap { $0.object["name"]?.stringValue }.joined(separator: ",")
            log.withLock { $0.append("deliver \(names)") }
            for user in Set(users) {
                entered[user]?.fire()
                if let signal = holding[user] { await signal.wait() }
            }
            log.withLock { $0.append("returned \(names)") }
            return DeliveryReport(.delivered, for: batch)
        }

        func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
            let call = eraseCalls.withLock { calls in
                defer { calls += 1 }
                return calls
            }
            log.withLock { $0.append("erase " + erasures.map(\.user.orderingKey).joined(separator: ",")) }
            var outcomes: [Int64: DeliveryOutcome] = [:]
            for erasure in erasures { outcomes[erasure.id] = eraseOutcome(call) }
            return DeliveryReport(outcomes: outcomes)
        }

        var events: [String] { log.withLock { $0 } }

        func index(of event: String) -> Int? { events.firstIndex(of: event) }
    }

    private func forget(_ user: String, brazeDelete: Bool = true) throws -> ForgetReport {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        return try writer.forget([.externalID(user)], brazeDelete: brazeDelete)
    }

    /// Issue 39 #3: an erasure row that a writer plants with a plain INSERT (no grant, a made-up grant, or the
    /// grant of another row copied onto it) is dead-lettered as not authorized, never sent, and counted; the
    /// forget of someone who can read the key goes out.
    @Test func aPlantedErasureIsDeadLetteredCountedAndNeverSent() async throws {
        let granted = try #require(try forget("u0").erasureIDs.first)
        let copied = try SQLiteShell.run(
            path, "SELECT json_extract(erasure, '$.grant') FROM records WHERE id = \(granted)"
        )
        .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(copied.count == 64)
        for (user, grant) in [("u1", "NULL"), ("u2", "'\"0123\"'"), ("u3", "'\"\(copied)\"'")] {
            try SQLiteShell.run(
                path,
                """
                INSERT INTO records (kind, payload, erasure) VALUES ('attribute', '{"external_id":"\(user)"}',
                    json_object('type', 'external_ids', 'after', json_array(), 'grant', json(\(grant))))
                """)
        }
        let sink = LoggingSink()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 10))
        let summary = try await drainOnce(drainer)
        #expect(summary.erased == 1 && summary.dead == 3, "\(summary)")
        #expect(sink.events == ["erase external_id:u0"], "\(sink.events)")
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        let stats = try admin.stats(includingErasures: true)
        #expect(stats.erasuresDead == 3 && stats.erasuresUnauthorized == 3, "\(stats)")
        let reasons = try SQLiteShell.run(path, "SELECT last_error FROM records WHERE state = 'dead'")
        #expect(
            reasons.components(separatedBy: "erasure not authorized: its grant does not verify").count == 4,
            "\(reasons)")
    }

    /// Without the key a process may not queue a Braze delete (exit 77 in `queuectl`), and nothing is forgotten.
    @Test func aForgetThatCannotReadTheKeyChangesNothing() throws {
        _ = try enqueue([testEvent("kept", user: "u1")], at: path)
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        setenv("EVENTQUEUE_ERASURE_KEY", directory.file("missing/erasure-key"), 1)
        defer { unsetenv("EVENTQUEUE_ERASURE_KEY") }
        #expect {
            try writer.forget([.externalID("u1")], brazeDelete: true)
        } throws: { error in
            guard case QueueError.erasureNotPermitted = error else { return false }
            return "\(error)".contains("eventqueue-admins")
        }
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        #expect(try admin.peek().count == 1)
    }

    @Test func anErasureIsSentAfterTheUsersEarlierRecordsAndBeforeLaterOnes() async throws {
        _ = try enqueue([testEvent("u2-first", user: "u2")], at: path)
        _ = try forget("u1")
        _ = try enqueue([testEvent("u1-later", user: "u1"), testEvent("u2-later", user: "u2")], at: path)
        let sink = LoggingSink()
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 10))
        let summary = try await drainOnce(drainer)
        #expect(summary.delivered == 4 && summary.erased == 1 && summary.result == .allDelivered)
        let erased = try #require(sink.index(of: "erase external_id:u1"), "\(sink.events)")
        let later = try #require(sink.events.firstIndex { $0.hasPrefix("deliver") && $0.contains("u1-later") })
        #expect(erased < later, "the later record waits for the erasure's ack: \(sink.events)")
        #expect(sink.events.first == "deliver u2-first,u2-later", "other users are not held: \(sink.events)")
    }

    /// The checker's case in-process: u1's record is in a request when the forget runs; the pass claims the erasure
    /// meanwhile (another batch settled), and sends it only once that request has returned.
    @Test func anErasureWaitsForTheRequestInFlightThatCarriedTheUsersRecord() async throws {
        _ = try enqueue(
            [testEvent("u1-a", user: "u1"), testEvent("u2-a", user: "u2"), testEvent("u3-a", user: "u3")], at: path)
        let (u1Entered, u1Proceed, u2Entered, u2Proceed) = (Signal(), Signal(), Signal(), Signal())
        let sink = LoggingSink(
            concurrency: 3, holding: ["u1": u1Proceed, "u2": u2Proceed], entered: ["u1": u1Entered, "u2": u2Entered])
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 1, maxInFlight: 3))
        let pass = Task { try await drainOnce(drainer) }
        await u1Entered.wait()
        await u2Entered.wait()
        let report = try forget("u1")
        #expect(report.leased == 1 && report.waitsFor.count == 1)
        let erasureID = try #require(report.erasureIDs.first)
        u2Proceed.fire()
        // u2's batch settled, so the pass claimed again: the erasure, which now waits for u1's request.
        try await waitFor("the erasure claimed while u1's request is in flight") {
            try liveRecords(path)[erasureID]?.state != .pending  // leased, or (without the hold) sent and acked
        }
        #expect(sink.index(of: "erase external_id:u1") == nil, "sent while u1's request was in flight: \(sink.events)")
        u1Proceed.fire()
        let summary = try await pass.value
        let returned = try #require(sink.index(of: "returned u1-a"))
        let erased = try #require(sink.index(of: "erase external_id:u1"), "\(sink.events)")
        #expect(returned < erased, "\(sink.events)")
        #expect(summary.erased == 1 && summary.delivered == 3, "u1's late ack deleted nothing: \(summary)")
        #expect(try liveRecords(path).isEmpty && deadRecords(path).isEmpty)
    }

    /// A sink whose first delivery goes without an answer: retried for the destination's sake (a timeout), or, with
    /// `noteOnly`, noted unanswered on the lease and delivered in the end (a split that went through after a
    /// timeout). Times its first return and its first erase.
    final class UnansweredOnceSink: Sink {
        let name = "unanswered-once"
        let maxConcurrentDeliveries = 1
        let noteOnly: Bool
        let times = Mutex<
            (
                failed: ContinuousClock.Instant?, erased: ContinuousClock.Instant?,
                identified: ContinuousClock.Instant?, other: ContinuousClock.Instant?
            )
        >((nil, nil, nil, nil))

        init(noteOnly: Bool) { self.noteOnly = noteOnly }

        func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
            let first = times.withLock { times in
                defer { if times.failed == nil { times.failed = .now } }
                return times.failed == nil
            }
            guard first else {
                times.withLock { times in
                    if batch.contains(where: \.kind.isIdentityCall) { times.identified = times.identified ?? .now }
                    if batch.contains(where: { !$0.kind.isIdentityCall }) { times.other = times.other ?? .now }
                }
                return DeliveryReport(.delivered, for: batch)
            }
            if noteOnly {
                DeliveryLease.current?.noteUnansweredRequest()
                return DeliveryReport(.delivered, for: batch)
            }
            return DeliveryReport(.retry(reason: "request timed out", cause: .destination), for: batch)
        }

        func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
            times.withLock { if $0.erased == nil { $0.erased = .now } }
            return DeliveryReport(outcomes: Dictionary(uniqueKeysWithValues: erasures.map { ($0.id, .delivered) }))
        }
    }

    /// Issue 40 #4: a request that ended without Braze's answer may still be applied by Braze (the checker saw a
    /// user's objects applied 10 s after the request timed out here, and after the delete), so the user's erasure
    /// waits `erasureHoldAfterUnanswered` after it, in a later pass too (before: the delete went as soon as the
    /// request had ended).
    @Test(arguments: [false, true])
    func anErasureWaitsOutTheHoldAfterAnUnansweredRequestOfTheUser(noteOnly: Bool) async throws {
        _ = try enqueue([testEvent("u1-a", user: "u1")], at: path)
        let sink = UnansweredOnceSink(noteOnly: noteOnly)
        var options = DrainOptions(batchSize: 10)
        options.erasureHoldAfterUnanswered = .seconds(2)
        let drainer = try makeDrainer(path, sink: sink, options: options)
        _ = try await drainer.drain()
        _ = try forget("u1")
        let summary = try await drainOnce(drainer)
        #expect(summary.erased == 1, "\(summary)")
        let (failed, erased) = sink.times.withLock { ($0.failed, $0.erased) }
        let gap = try #require(erased) - (try #require(failed))
        #expect(gap >= .seconds(2), "erased \(gap) after the unanswered request")
    }

    /// Issue 41's order for an identity call: like an erasure, an identify waits out the hold after an unanswered
    /// request of a user it names (Braze may still apply the alias's timed-out events after it merged the alias
    /// away); the rest of its batch is not held.
    @Test func anIdentityCallWaitsOutTheHoldAfterAnUnansweredRequestOfItsUsers() async throws {
        let device = UserIdentity.alias(name: "dev-1", label: "device_id")
        _ = try enqueue([Record.event("opened", user: device, properties: [:])], at: path)
        let sink = UnansweredOnceSink(noteOnly: true)
        var options = DrainOptions(batchSize: 10)
        options.erasureHoldAfterUnanswered = .seconds(2)
        let drainer = try makeDrainer(path, sink: sink, options: options)
        _ = try await drainer.drain()
        _ = try enqueue([.identify(externalID: "U1", device), testEvent("other", user: "u9")], at: path)
        let started = ContinuousClock.now
        let summary = try await drainOnce(drainer)
        #expect(summary.delivered == 2, "\(summary)")
        let (failed, identified, other) = sink.times.withLock { ($0.failed, $0.identified, $0.other) }
        let gap = try #require(identified) - (try #require(failed))
        #expect(gap >= .seconds(2), "identified \(gap) after the unanswered request")
        #expect(try #require(other) - started < .seconds(2), "the other user's record was held with the call")
    }

    /// Issue 40 #4: the user's record was leased by another consumer (a drainer stopped elsewhere, which may send
    /// until its lease ends) when the forget ran: the erasure waits for that lease's end plus the hold (before: it
    /// went at once, that lease not being in flight in this pass).
    @Test func anErasureWaitsForALeaseHeldElsewhereToEndPlusTheHold() async throws {
        _ = try enqueue([testEvent("u1-a", user: "u1")], at: path)
        let elsewhere = try QueueConsumer(path: path, consumerID: "elsewhere:1:stopped")
        defer { elsewhere.close() }
        #expect(try elsewhere.claim(limit: 10, leaseMilliseconds: 1_000).records.count == 1)
        let forgotten = ContinuousClock.now
        #expect(try forget("u1").leased == 1)
        let sink = LoggingSink()
        var options = DrainOptions(batchSize: 10)
        options.erasureHoldAfterUnanswered = .seconds(1)
        let summary = try await drainOnce(try makeDrainer(path, sink: sink, options: options))
        let waited = ContinuousClock.now - forgotten
        #expect(summary.erased == 1 && sink.events == ["erase external_id:u1"], "\(summary) \(sink.events)")
        #expect(waited >= .milliseconds(1_500), "the lease's end (1 s) and the hold (1 s): \(waited)")
        #expect(waited < .seconds(30), "not the longest lease there can be: \(waited)")
        // A value a writer planted in the column bounds the wait too: at most the longest lease plus the hold.
        let leases = InFlightLeases(unansweredHold: .seconds(1))
        let longest = Duration.milliseconds(ClockHorizon.longestWaitMilliseconds) + .seconds(1)
        for planted in [Int64.max, Int64.min, -1, 0] {
            var erasure = OutgoingErasure(id: 1, user: .externalID("u1"), waitsFor: ["elsewhere:1:x#1"])
            erasure.leasedUntilMilliseconds = planted
            let wait = leases.foreignLeaseWait(erasure, nowMilliseconds: 1_000_000)
            #expect(wait >= .seconds(1) && wait <= longest, "\(planted): \(wait)")
        }
    }

    @Test func anErasureRetriedAfterATransientFailureStillHoldsBackTheUsersLaterRecords() async throws {
        _ = try forget("u1")
        _ = try enqueue([testEvent("u1-later", user: "u1")], at: path)
        let sink = LoggingSink { call in
            call == 0 ? .retry(reason: "HTTP 503", afterMilliseconds: 60_000, cause: .record) : .delivered
        }
        let first = try await drainOnce(try makeDrainer(path, sink: sink))
        #expect(first.retried == 1 && first.delivered == 0)
        #expect(!sink.events.contains { $0.hasPrefix("deliver") }, "the later record waited: \(sink.events)")
        let live = try liveRecords(path).values.sorted { $0.id < $1.id }
        #expect(live.map(\.attempts) == [1, 0] && live.first?.erasure != nil)
    }

    /// Issue 40 #5: the deletion endpoint's outage is its own. Failing erasures neither make the sink unavailable
    /// (records of other users keep going) nor go out again at once; an erasure's answer never ends a track outage.
    @Test func aDeletionOutageNeitherStopsRecordsNorLoops() async throws {
        _ = try forget("u1")
        _ = try enqueue((1...5).map { testEvent("u2-\($0)", user: "u2") }, at: path)
        let sink = LoggingSink { _ in .retry(reason: "HTTP 503", cause: .destination) }
        let drainer = try makeDrainer(path, sink: sink, options: DrainOptions(batchSize: 1))
        let started = WallClock.nowMilliseconds()
        let summary = try await drainOnce(drainer)
        #expect(summary.delivered == 5 && summary.retried == 1, "\(summary)")
        #expect(drainer.availability.snapshot.state == .available)
        #expect(sink.events.filter { $0.hasPrefix("erase") }.count == 1, "not sent again at once: \(sink.events)")
        let erasure = try #require(try liveRecords(path).values.first)
        #expect(erasure.attempts == 0 && erasure.nextAttemptAtMilliseconds >= started + 1_000)

        var row = OutgoingRecord(
            id: 1, kind: .event, object: [:], userKey: "external_id:u1", createdAtMilliseconds: 0, attempts: 0)
        row.erasure = OutgoingErasure(id: 1, user: .externalID("u1"))
        let settled = Settlement(records: [row], report: DeliveryReport(outcomes: [1: .delivered]), cancelled: false)
        #expect(!settled.signal(probe: true).answered, "an erasure's answer says nothing of /users/track")
    }

    @Test func aSinkThatCannotEraseDeadLettersTheErasureWithTheReason() async throws {
        _ = try forget("u1")
        let sink = ScriptedSink.acceptingEverything()
        let summary = try await drainOnce(try makeDrainer(path, sink: sink))
        #expect(summary.dead == 1 && summary.erased == 0 && sink.callCount == 0)
        let dead = try #require(try deadRecords(path).values.first)
        #expect(dead.erasure?.type == .externalIDs)
        #expect(dead.lastError?.contains("cannot delete users") == true, "\(dead)")
    }

    @Test func theNullSinkAndAFileTakeErasures() async throws {
        _ = try forget("u1")
        #expect(try await drainOnce(try makeDrainer(path, sink: NullSink())).erased == 1)
        _ = try forget("u1")
        let lines = directory.file("out.jsonl")
        let summary = try await drainOnce(try makeDrainer(path, sink: try JSONLinesSink(path: lines)))
        #expect(summary.erased == 1)
        let text = try String(contentsOfFile: lines, encoding: .utf8)
        #expect(text.hasSuffix(#","type":"erasure","erasure":"external_ids","object":{"external_id":"u1"}}"# + "\n"))
    }
}
