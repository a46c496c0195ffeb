import EventQueue
import Foundation
import Synchronization
import Testing

@testable import EventQueueDelivery

/// Issue 30 point 8: a week-long outage, simulated in seconds. A real queue file under the daemon's default age
/// limit (a week) and a small size limit with drop-oldest; two writers enqueue through it (real enqueues, dated by
/// the simulated clock); a sink answers 500 for 7 simulated days and 8 hours, then recovers; the drain loop runs a
/// pass whenever the daemon would wake (for each probe the availability schedule asks for, `followsEveryProbe`, and
/// after each burst of writes). Then every written id is exactly one of: delivered once, dropped for room, or
/// expired as a dead letter; the counts in the file (`queue_drops`) say the same, each record under the cause that
/// gave it up first (an expired dead letter dropped later for room stays `expired` only); each user's delivered
/// records are in order; the probes stayed bounded.
///
/// Teeth (both tried, not committed): with expiry judged by the system's clocks instead of the injected one
/// (`Drainer.enforceLimits` calling `admin.enforceLimits()` without `now` and `boot`: the queue clock then moves by
/// the real monotonic clock), nothing expires in the simulated week and the test fails on the expired count; with transient failures counted as attempts (`Settlement` filing a
/// `.destination` retry as `.record`), probed records become dead letters "gave up after 10 attempts", and the test
/// fails on the dead letters that are not expired ones, the attempts, the counts in the file and the probes' spacing.
@Suite(.timeLimit(.minutes(2)))
struct WeekLongOutageTests {
    let directory = Scratch()
    var path: String { directory.queuePath }

    static let minute: Int64 = 60_000
    static let hour: Int64 = 60 * minute
    static let day: Int64 = 24 * hour

    /// Down (500, the destination's fault) until `recoversAt` on the simulated wall clock, then accepting; keeps
    /// what it accepted, in order, with the time it accepted it, and the time of every request while down.
    final class OutageSink: Sink {
        let name = "outage"
        let maxConcurrentDeliveries = 4
        /// A probe is one request's worth: one record, the cheapest probe, so that thousands of them cost little
        /// (what a probe takes is `DrainerOutageTests`' business).
        let recordsPerRequest: Int? = 1
        let clock: ManualClock
        let recoversAt: Int64
        let accepted = Mutex<[(record: OutgoingRecord, at: Int64)]>([])
        let failedRequests = Mutex<[Int64]>([])

        init(clock: ManualClock, recoversAt: Int64) {
            self.clock = clock
            self.recoversAt = recoversAt
        }

        func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
            let now = clock.wallMilliseconds()
            guard now >= recoversAt else {
                failedRequests.withLock { $0.append(now) }
                return DeliveryReport(.retry(reason: "Braze answered 500", cause: .destination), for: batch)
            }
            accepted.withLock { $0.append(contentsOf: batch.map { ($0, now) }) }
            return DeliveryReport(.delivered, for: batch)
        }
    }

    /// The writers' traffic per 10 simulated minutes, `elapsed` into an outage of `outage`: two busy hours as it
    /// begins (an evening), a quiet night, then a trickle all week (a record every 20 minutes), and a busy morning
    /// (a campaign) in the hours before the sink recovers. The first hours' records are a week old before the
    /// recovery: the age limit expires them while the file has room, so each expiry is seen by the test before
    /// anything is dropped; the busy morning writes more than the size limit holds: drop-oldest deletes those
    /// expired dead letters first, then the oldest pending records. Nothing else expires before the recovery.
    static func recordsPerTick(after elapsed: Int64, outage: Int64) -> Int {
        if elapsed < 2 * hour { return 60 }
        if (outage - 5 * hour..<outage - hour).contains(elapsed) { return 90 }
        if elapsed < 12 * hour { return 0 }
        return elapsed / (10 * minute) % 2 == 0 ? 1 : 0
    }

    /// Whether the simulation wakes for every probe the availability schedule asks for, as the daemon's timer
    /// does, `elapsed` into the outage: in the first and the last day (the schedule's ramp to its cap, the expiry,
    /// the recovery), and all week long in the long profile (`EVENTQUEUE_LONG_TESTS=1`). In between, the CI
    /// profile runs a pass only after each burst of writes (every 10 simulated minutes, as a launch does), so that a
    /// week of a probe a minute costs seconds: each finds a probe due and sends it.
    static func followsEveryProbe(at elapsed: Int64, recoveryAfter outage: Int64) -> Bool {
        TestProfile.isLong || elapsed < day || elapsed >= outage - day
    }

    /// The queue file's size on disk (its `-wal` apart).
    static func fileBytes(_ path: String) -> Int64 {
        let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber
        return size?.int64Value ?? 0
    }

    /// One real enqueue (the public enqueue's path, `enqueue(_: EncodedRecord)`), dated `now` by the simulated
    /// clock; `nil` when the size limit refused it.
    static func enqueue(_ record: Record, at now: Int64, by writer: QueueWriter) throws(QueueError) -> Int64? {
        do {
            return try writer.enqueue(QueueWriter.encode(record, now: now))
        } catch {
            guard case .queueFull = error else { throw error }
            return nil
        }
    }

    @Test func aWeekLongOutageEndsWithEveryRecordDeliveredDroppedOrExpiredOnceAndInOrder() async throws {
        let clock = ManualClock()
        let start = clock.wallMilliseconds()
        let recoversAt = start + 7 * Self.day + 8 * Self.hour
        let ends = recoversAt + Self.hour
        let maxQueueBytes: Int64 = 1 << 20  // the smallest the daemon accepts
        let limits = QueueLimits(
            maxQueueBytes: maxQueueBytes, whenFull: .dropOldest, maxAgeSeconds: QueueLimits.defaultMaxAgeSeconds)
        let fast = QueueOptions(durability: .normal, minimumFreeBytes: 0)
        let writers = try (0..<2).map { _ in try QueueWriter(path: path, options: fast) }
        defer { for writer in writers { writer.close() } }
        // What `queued` does at start: record its limits in the file for every writer.
        try inspect(path) { try $0.admin.recordLimits(limits, now: start) }

        let sink = OutageSink(clock: clock, recoversAt: recoversAt)
        // Without the upkeep after each pass (checkpoint, vacuum, key purge: 14 of a debug pass's 18 ms, and what
        // the shrink tests are about): the space that matters here is the size limit's, which the writers and the
        // pass's own `enforceLimits` keep, vacuum included.
        let options = DrainOptions(batchSize: 50, maintenanceAfterPass: false, maxInFlight: 4)
        let drainer = try makeDrainer(path, sink: sink, options: options, queueOptions: fast, clock: clock)

        // One connection to read the counts after each pass (opening one per pass would cost more than the pass).
        let admin = try QueueAdmin(path: path)
        defer { admin.close() }
        var written: [Int64] = []
        var userOf: [Int64: String] = [:]
        var createdAt: [Int64: Int64] = [:]
        var refused = 0
        var expired: Set<Int64> = []
        var passes = 0
        var largestFile: Int64 = 0
        let tick = 10 * Self.minute
        var nextWrite = start
        var sequence = 0
        while clock.wallMilliseconds() < ends {
            // The next thing the daemon wakes for: the writers' next burst, or the next probe.
            var next = nextWrite
            if let probe = drainer.availability.snapshot.nextProbeAtMilliseconds,
                Self.followsEveryProbe(at: clock.wallMilliseconds() - start, recoveryAfter: recoversAt - start)
            {
                next = min(next, probe)
            }
            clock.advance(toWallMilliseconds: next)
            let now = clock.wallMilliseconds()
            if now >= nextWrite {
                for _ in 0..<Self.recordsPerTick(after: now - start, outage: recoversAt - start) {
                    let user = "u\(sequence % 40)"
                    let record = Record.event(
                        "e\(sequence)", user: .externalID(user),
                        properties: ["n": .string("\(sequence)"), "pad": .string(String(repeating: "x", count: 250))])
                    sequence += 1
                    guard let id = try Self.enqueue(record, at: now, by: writers[sequence % 2]) else {
                        refused += 1
                        continue
                    }
                    written.append(id)
                    userOf[id] = "external_id:" + user
                    createdAt[id] = now
                }
                nextWrite += tick
                largestFile = max(largestFile, Self.fileBytes(path))
            }
            _ = try await drainer.drain()
            passes += 1
            // Expiry happens only at a pass's edges, so reading the dead letters after each pass sees every record
            // that expired, even one a writer's drop-oldest deletes later.
            if try admin.drops().expired > expired.count {
                for letter in try admin.deadLetters() where letter.lastError?.hasPrefix("expired") == true {
                    expired.insert(letter.id)
                }
            }
        }
        let drops = try admin.drops()
        let remaining = try liveRecords(path)
        let deadAtEnd = try deadRecords(path)
        await drainer.store.close()

        let accepted = sink.accepted.withLock { $0 }
        let delivered = Set(accepted.map(\.record.id))
        let writtenSet = Set(written)
        let dropped = writtenSet.subtracting(delivered).subtracting(expired)

        // Every written id is exactly one of delivered, dropped, expired.
        #expect(written.count == writtenSet.count)
        #expect(delivered.isDisjoint(with: expired), "an expired record was delivered")
        #expect(delivered.count + dropped.count + expired.count == written.count)
        #expect(delivered.isSubset(of: writtenSet), "delivered something never written")
        #expect(remaining.isEmpty, "everything left was delivered after the recovery: \(remaining.count) remain")
        #expect(dropped.isDisjoint(with: Set(deadAtEnd.keys)), "a dropped record is gone from the file")
        #expect(Set(deadAtEnd.keys).isSubset(of: expired), "the only dead letters are expired ones")
        #expect(deadAtEnd.values.allSatisfy { $0.attempts == 0 }, "the outage cost no attempt")

        // Both limits acted, and the file's counts say exactly what was given up, each record once: an expired
        // dead letter that a writer later deleted to make room (drop-oldest gives up the oldest dead letters first)
        // stays counted as expired only.
        let expiredThenDropped = expired.subtracting(deadAtEnd.keys)
        #expect(!expiredThenDropped.isEmpty, "the scenario drops expired dead letters for room too")
        #expect(dropped.count > 500, "the size limit dropped the oldest: \(dropped.count)")
        #expect(expired.count > 500, "the age limit expired what was a week old: \(expired.count)")
        #expect(refused == 0 && drops.refused == 0, "drop-oldest refuses nothing")
        #expect(largestFile <= maxQueueBytes * 5 / 4, "the file within 1.25 times its limit: \(largestFile) bytes")
        #expect(drops.expired == Int64(expired.count))
        #expect(drops.oldest == Int64(dropped.count), "an expired record dropped later is not counted twice")
        #expect(drops.oldest + drops.expired == Int64(written.count - delivered.count))
        let dropCutoff = try #require(dropped.max())
        #expect(delivered.allSatisfy { $0 > dropCutoff }, "drop-oldest kept the newest records")

        // The history: nothing lost of what was kept, nothing delivered twice, each user's records in order.
        let history = HistoryChecker.check(
            enqueued: Set(delivered.union(remaining.keys).map(String.init)),
            delivered: accepted.map {
                HistoryChecker.Delivery(marker: String($0.record.id), user: $0.record.userKey, id: $0.record.id)
            })
        #expect(history.isValid, "\(history)")
        #expect(history.duplicateDeliveries == 0, "\(history)")
        #expect(accepted.count == delivered.count, "each record delivered once")
        #expect(accepted.allSatisfy { userOf[$0.record.id] == $0.record.userKey })

        // Nothing a week old went out, and the backlog went out right after the recovery: at the first probe (at
        // most 75 s after), within the pass.
        let maxAge = QueueLimits.defaultMaxAgeSeconds * 1_000
        #expect(accepted.allSatisfy { $0.at - (createdAt[$0.record.id] ?? 0) <= maxAge })
        let firstDelivery = try #require(accepted.first?.at)
        #expect(
            (0...75_000).contains(firstDelivery - recoversAt), "first delivery \(firstDelivery - recoversAt) ms after")
        let backlog = accepted.filter { (createdAt[$0.record.id] ?? 0) < recoversAt }
        #expect(backlog.allSatisfy { $0.at == firstDelivery }, "the whole backlog in the pass of the first probe")

        // Probes stayed bounded for the whole week: once the backoff reached its cap (a minute, plus up to 25 %
        // jitter), one request a minute at most, and never more than a probe's gap without one.
        let requests = sink.failedRequests.withLock { $0 }
        let settled = requests.filter { $0 >= start + 10 * Self.minute }
        let gaps = zip(settled.dropFirst(), settled).map { (at: $0 - start, gap: $0 - $1) }
        let followed = gaps.filter {
            Self.followsEveryProbe(at: $0.at - $0.gap, recoveryAfter: recoversAt - start)
                && Self.followsEveryProbe(at: $0.at, recoveryAfter: recoversAt - start)
        }
        #expect(followed.count > 2_000, "the probes of the followed days: \(followed.count)")
        #expect(gaps.allSatisfy { $0.gap >= 60_000 }, "a probe less than a minute after the one before")
        #expect(
            followed.allSatisfy { $0.gap <= 75_000 },
            "while followed, a probe within the cap and its jitter: \(followed.map(\.gap).max() ?? 0) ms")
        let outageMinutes = Int((recoversAt - start) / Self.minute)
        #expect(requests.count <= outageMinutes + 20, "\(requests.count) requests in \(outageMinutes) minutes")
        print(
            "week-long outage: written \(written.count), delivered \(delivered.count), dropped \(dropped.count), "
                + "expired \(expired.count) (\(expiredThenDropped.count) of them dropped later), "
                + "requests while down \(requests.count), passes \(passes)")
    }
}
