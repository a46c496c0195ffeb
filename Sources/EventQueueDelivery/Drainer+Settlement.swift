import EventQueue
import Logging

/// The settling half of a drain pass: what becomes of each finished batch (`settle`, `write`) and the one
/// transaction that acks delivered records together with the next claims (`commit`).
extension Drainer {
    /// Acks the pending deliveries together with up to `claiming` new claims of up to `limit` records (one
    /// transaction: `QueueConsumer.ackAndClaim`), then reports progress for the batches settled since the last
    /// report; returns the claims.
    @discardableResult
    func commit(
        _ pass: inout PassState, claiming count: Int? = nil, limit: Int? = nil, probeHalf: Int? = nil,
        progress: (@Sendable (DrainSummary) async -> Void)?
    ) async throws(QueueError) -> [Claim] {
        let pending = pass.pendingAcks
        if pending.isEmpty, count == nil, pass.unreported == 0 { return [] }
        let (leaseMilliseconds, limit, clock) = (options.leaseMilliseconds, limit ?? claimSize, self.clock)
        // `now` is read on the store's executor: a wait for it must not shorten the leases written.
        let (acked, claims, deadAtClaim, now) = try await retryingWhileBusy(holding: pending) {
            consumer throws(QueueError) -> (Int, [Claim], Int, Int64) in
            let now = clock.wallMilliseconds()
            if pending.isEmpty, (count ?? 0) == 0 { return (0, [], 0, now) }
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
            // The lease lapsed and their new holder will deliver them again, or `forget` removed them.
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
    /// it: it is run again until the lock comes back. Those records are at the destination already; giving up
    /// would deliver them twice once the lease lapsed. Nothing else can claim them meanwhile (a claim is a write),
    /// and the ack matches the lease's token, not its expiry. Only cancellation stops the retries.
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

    /// The pause between two tries of an ack that found the file locked (after SQLite's busy timeout).
    static let ackRetryPause: Duration = .milliseconds(100)

    /// Writes one finished batch's dead letters, retries and releases, queues its delivered records for
    /// `commit`, and tells the sink's availability what the batch said about the destination.
    func settle(_ finished: LeasedDelivery.Finished, pass: inout PassState) async throws(QueueError) {
        let settlement = Settlement(
            records: finished.delivery.records, report: finished.report, cancelled: finished.cancelled)
        let lease = finished.delivery.claim.lease
        if !settlement.delivered.isEmpty { pass.pendingAcks.append((settlement.delivered, lease)) }
        let delivered = Set(settlement.delivered)
        pass.summary.erased += finished.delivery.records.count { $0.erasure != nil && delivered.contains($0.id) }
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

    /// Dead-letters, retries and releases a settlement's records in one visit to the store. A destination
    /// failure is due again at once with no attempt counted: the sink's availability decides when it goes out,
    /// and its id keeps it ahead of its user's later records.
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
