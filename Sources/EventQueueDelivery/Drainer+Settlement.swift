import EventQueue
import Logging

/// The settling half of a drain pass: what becomes of each finished batch (`settle`, `write`) and the one
/// transaction that acks delivered records together with the next claims (`commit`). The pass loop that opens
/// deliveries and waits for them is `Drainer.swift`.
extension Drainer {
    /// The one place that acks, and the one place that reports progress: commits the delivered records of the
    /// batches that settled since the last commit, together with up to `claiming` new claims when given (one
    /// transaction: `QueueConsumer.ackAndClaim`), then reports progress if a batch settled since the last
    /// report. Returns the claims (none when nothing was claimable or none was asked for), each of up to `limit`
    /// records (`claimSize` unless given: a probe claims one request's worth).
    @discardableResult
    func commit(
        _ pass: inout PassState, claiming count: Int? = nil, limit: Int? = nil, probeHalf: Int? = nil,
        progress: (@Sendable (DrainSummary) async -> Void)?
    ) async throws(QueueError) -> [Claim] {
        let pending = pass.pendingAcks
        if pending.isEmpty, count == nil, pass.unreported == 0 { return [] }
        let (leaseMilliseconds, limit, clock) = (options.leaseMilliseconds, limit ?? claimSize, self.clock)
        // The clock is read on the store's executor, just before the statements: a wait for the executor must
        // not shorten the leases written.
        let (acked, claims, deadAtClaim, now) = try await retryingWhileBusy(holding: pending) {
            consumer throws(QueueError) -> (Int, [Claim], Int, Int64) in
            let now = clock.wallMilliseconds()
            // Nothing to ack and nothing to claim: no transaction (a pass whose last batches were all retried).
            if pending.isEmpty, (count ?? 0) == 0 { return (0, [], 0, now) }
            // Acks only (no claim follows at once) still go in one transaction: one fsync for the group.
            let deadBefore = consumer.deadLetteredAtClaim
            let result = try consumer.ackAndClaim(
                pending, claims: count ?? 0, limit: limit, leaseMilliseconds: leaseMilliseconds, now: now,
                halfOfUsers: probeHalf)
            return (result.acked, result.claims, consumer.deadLetteredAtClaim - deadBefore, now)
        }
        // Rows the claim set aside (out of range, too large to read) went dead in this pass.
        pass.summary.dead += deadAtClaim
        if count != nil { pass.lastClaimAt = now }
        pass.pendingAcks = []
        pass.summary.delivered += acked
        let delivered = pending.reduce(0) { $0 + $1.ids.count }
        if acked < delivered {
            // The lease lapsed (a stall longer than the lease) and someone else holds those records now: this
            // late ack changed nothing for them, and they will be delivered again by their new holder. Or `forget`
            // removed them while they were in flight: there is nothing left to ack.
            logger.warning(
                "late ack discarded: the lease of some delivered records had lapsed, or they were forgotten",
                metadata: ["acked": "\(acked)", "delivered": "\(delivered)"])
        }
        let reports = pass.unreported
        pass.unreported = 0
        if let progress {
            for _ in 0..<reports { await progress(pass.summary) }
        }
        return claims
    }

    /// Runs `body` (the ack transaction) on the store; while it acks delivered records, a busy file does not end
    /// it: the body is run again once the lock comes back, however long another process holds it.
    ///
    /// Why: those records are at the destination already. Giving up here (as a claim may: nothing is lost by
    /// trying later) would leave them leased, and once the lease lapsed they would be delivered a second time.
    /// A writer holding the lock for longer than the busy timeout (a bulk import, an admin's `BEGIN EXCLUSIVE`)
    /// is the case; nothing else can claim them meanwhile (a claim is a write too), and the ack matches the
    /// lease's token, not its expiry, so a late ack still deletes them. Only cancellation (a shutdown past its
    /// timeout) stops the retries: the records are then delivered again after their lease, as after a crash.
    func retryingWhileBusy<T: Sendable>(
        holding pending: [(ids: [Int64], lease: Lease)],
        _ body: @Sendable (QueueConsumer) throws(QueueError) -> T
    ) async throws(QueueError) -> T {
        var tries = 0
        while true {
            do {
                let result = try await store.withConsumer(body)
                if tries > 0 {
                    logger.notice(
                        "the queue file is writable again; acked the delivered records",
                        metadata: ["tries": "\(tries + 1)"])
                }
                return result
            } catch {
                guard case .busy = error, !pending.isEmpty, !Task.isCancelled else { throw error }
                tries += 1
                logger.warning(
                    "another process holds the queue file's write lock; keeping the delivered records and retrying their ack",
                    metadata: [
                        "records": "\(pending.reduce(0) { $0 + $1.ids.count })", "tries": "\(tries)",
                        "error": "\(error)",
                    ])
                do {
                    try await clock.sleep(for: Self.ackRetryPause)
                } catch _ {
                    throw error  // cancelled while waiting
                }
            }
        }
    }

    /// The pause between two tries of an ack that found the file locked (each try already waited for the busy
    /// timeout inside SQLite).
    static let ackRetryPause: Duration = .milliseconds(100)

    /// Writes one finished batch's outcomes: dead-letters, retries and releases now; the delivered records
    /// join the pending acks, committed by `commit` right after (with the next claims when some follow at once).
    /// Then tells the sink's availability what the batch said about the destination; while it is unavailable the
    /// pass claims nothing but a probe (`runPass`).
    func settle(_ finished: LeasedDelivery.Finished, pass: inout PassState) async throws(QueueError) {
        let settlement = Settlement(
            records: finished.delivery.records, report: finished.report, cancelled: finished.cancelled)
        let lease = finished.delivery.claim.lease
        if !settlement.delivered.isEmpty { pass.pendingAcks.append((settlement.delivered, lease)) }
        pass.summary.erased += finished.erased(settlement)
        pass.unreported += 1
        if !settlement.rejected.isEmpty || !settlement.retries.isEmpty || !settlement.released.isEmpty {
            let attempts = Dictionary(
                finished.delivery.records.map { ($0.id, $0.attempts) }, uniquingKeysWith: { first, _ in first })
            let written = try await write(settlement, lease: lease, attempts: attempts)
            pass.summary.dead += written.dead
            pass.summary.retried += written.retried
        }
        availability.record(settlement.signal(probe: finished.delivery.probe))
        if let halt = settlement.halt, pass.summary.halt == nil {
            pass.summary.halt = halt
            logger.warning("drain pass stopped early", metadata: ["reason": "\(halt)"])
        }
    }

    /// Dead-letters, retries and releases the records of a settlement in one visit to the store. A record that
    /// failed for the destination's sake goes back to pending due at once, with its id, no attempt counted and
    /// its reason as `last_error`: the sink's availability, not a backoff of its own, decides when it goes out
    /// again, and its id keeps it ahead of its user's later records (the claim's per-user rule).
    func write(
        _ settlement: Settlement, lease: Lease, attempts: [Int64: Int]
    ) async throws(QueueError) -> (dead: Int, retried: Int) {
        let (backoff, maxAttempts, clock) = (options.backoff, options.maxAttempts, self.clock)
        var attemptOf: [Settlement.RetryGroup: Int] = [:]
        for (group, ids) in settlement.retries {
            // Failed attempts so far, from the claimed row: clamped, as the file is input like any other.
            let previous = ids.compactMap { attempts[$0] }.max() ?? 0
            attemptOf[group] = previous >= Int(Int32.max) ? Int(Int32.max) : previous + 1
        }
        return try await store.withConsumer { consumer throws(QueueError) in
            let now = clock.wallMilliseconds()
            var (dead, retried) = (0, 0)
            for (reason, ids) in settlement.rejected {
                dead += try consumer.reject(ids, lease: lease, reason: reason, now: now)
            }
            for (group, ids) in settlement.retries {
                let retryAt =
                    group.cause == .destination
                    ? now
                    : backoff.dueTime(attempt: attemptOf[group] ?? 1, hint: group.afterMilliseconds, now: now)
                let nacked = try consumer.nack(
                    ids, lease: lease, reason: group.reason, retryAt: retryAt,
                    countsAsAttempt: group.countsAsAttempt, maxAttempts: maxAttempts, now: now)
                retried += nacked.retried.count
                dead += nacked.dead.count
            }
            _ = try consumer.release(settlement.released, lease: lease)
            return (dead, retried)
        }
    }
}
