import EventQueue
import Logging

/// The drain loop: claim a batch under a lease, hand it to the sink, and record each record's outcome; repeat
/// until nothing is claimable. Records enqueued while the pass runs are delivered by the same pass.
///
/// Crash-safe by construction: a record is deleted only after the sink reported it delivered, so a crash at any
/// point redelivers at most the batch that was between "sink accepted" and "ack committed".
public struct Drainer: Sendable {
    public let store: QueueStore
    public let sink: any Sink
    public let options: DrainOptions
    public let logger: Logger

    public init(store: QueueStore, sink: any Sink, options: DrainOptions = DrainOptions(), logger: Logger) {
        self.store = store
        self.sink = sink
        self.options = options
        self.logger = logger
    }

    /// Runs one pass. `progress` is called after every batch; `shouldStop` is checked before every claim (a
    /// graceful shutdown stops claiming but lets the batch in flight finish). When the task is cancelled, the
    /// outcomes the sink did report are applied and the records it reported nothing for are released at once.
    public func drain(
        progress: (@Sendable (DrainSummary) async -> Void)? = nil,
        shouldStop: @Sendable () -> Bool = { false }
    ) async throws(QueueError) -> DrainSummary {
        var summary = DrainSummary()
        if let holder = try await store.acquireDrainLock(leaseMilliseconds: options.leaseMilliseconds) {
            logger.info("another drainer holds the drain lock", metadata: ["owner": "\(holder.owner)"])
            summary.lockHolder = holder
            summary.remaining = try await store.stats()
            return summary
        }
        // When the last claim ran: the next retry is counted from it. A record that came due between that
        // claim and the statistics below was not claimed, and counting from "now" would call it neither due
        // later nor claimed: no pass would be scheduled for it.
        var lastClaimAt: Int64?
        do {
            try await runPass(&summary, lastClaimAt: &lastClaimAt, progress: progress, shouldStop: shouldStop)
        } catch {
            try? await store.releaseDrainLock()
            throw error
        }
        try await store.releaseDrainLock()
        try await maintain()
        summary.remaining = try await store.stats(now: lastClaimAt)
        logger.info(
            "drain pass finished",
            metadata: [
                "delivered": "\(summary.delivered)", "retried": "\(summary.retried)", "dead": "\(summary.dead)",
                "batches": "\(summary.batches)", "result": "\(summary.result.rawValue)",
            ])
        return summary
    }

    private func runPass(
        _ summary: inout DrainSummary, lastClaimAt: inout Int64?, progress: (@Sendable (DrainSummary) async -> Void)?,
        shouldStop: @Sendable () -> Bool
    ) async throws(QueueError) {
        var failedBatchesInARow = 0
        // The lock was just taken. Renewing it is a write transaction, so it is renewed once a third of its lease
        // has passed rather than before every batch (a slow delivery renews it meanwhile: deliverRenewingLease).
        var lockRenewedAt = ContinuousClock.now
        let renewLockAfter = Duration.milliseconds(options.leaseMilliseconds / 3)
        // The delivered records of the batch just delivered: acked together with the next claim, in one
        // transaction (QueueConsumer.ackAndClaim), or on their own when the pass ends.
        var unacked: PendingAck?
        do {
            while !shouldStop(), !Task.isCancelled {
                if ContinuousClock.now - lockRenewedAt >= renewLockAfter {
                    if let holder = try await store.acquireDrainLock(leaseMilliseconds: options.leaseMilliseconds) {
                        // Only possible if this pass stalled for longer than the lease and another drainer took over.
                        summary.halt = SinkHalt(kind: .unavailable, reason: "lost the drain lock to \(holder.owner)")
                        break
                    }
                    lockRenewedAt = ContinuousClock.now
                }
                lastClaimAt = WallClock.nowMilliseconds()
                let claim = try await claimNext(acking: &unacked, summary: &summary, progress: progress)
                if claim.records.isEmpty { break }
                summary.batches += 1
                let batch = try await deliver(claim, summary: &summary)
                if !batch.delivered.isEmpty { unacked = PendingAck(ids: batch.delivered, lease: claim.lease) }
                // A long pass (a big backlog) keeps the WAL in check as it goes, not only at the end.
                try await store.truncateWALIfLarger(than: Self.walCheckpointThreshold)
                // Progress once per batch: now if nothing waits for an ack, else once the ack commits (claimNext,
                // or the end of the pass).
                if unacked == nil, let progress { await progress(summary) }
                if let halt = batch.halt {
                    summary.halt = halt
                    logger.warning("drain pass stopped early", metadata: ["reason": "\(halt)"])
                    break
                }
                failedBatchesInARow = batch.allFailed ? failedBatchesInARow + 1 : 0
                if failedBatchesInARow >= options.haltAfterFailedBatches {
                    summary.halt = SinkHalt(
                        kind: .unavailable,
                        reason: "\(failedBatchesInARow) batches in a row failed; last error: \(batch.lastError ?? "?")")
                    logger.warning(
                        "drain pass stopped early", metadata: ["reason": "\(summary.halt.map { "\($0)" } ?? "")"])
                    break
                }
            }
        } catch {
            // The combined transaction rolled back (a busy file, an I/O error): the delivered batch is still
            // unacked. Try to ack it on its own so it is not delivered again; then report the error.
            if let pending = unacked, let acked = try? await store.ack(pending.ids, lease: pending.lease) {
                summary.delivered += acked
            }
            throw error
        }
        if let pending = unacked {
            summary.delivered += try await store.ack(pending.ids, lease: pending.lease)
            if let progress { await progress(summary) }
        }
    }

    /// Claims the next batch, acking the last batch's deliveries in the same transaction when there are any.
    private func claimNext(
        acking unacked: inout PendingAck?, summary: inout DrainSummary,
        progress: (@Sendable (DrainSummary) async -> Void)?
    ) async throws(QueueError) -> Claim {
        guard let pending = unacked else {
            return try await store.claim(limit: options.batchSize, leaseMilliseconds: options.leaseMilliseconds)
        }
        let result = try await store.ackAndClaim(
            pending.ids, lease: pending.lease, limit: options.batchSize, leaseMilliseconds: options.leaseMilliseconds)
        unacked = nil
        summary.delivered += result.acked
        if let progress { await progress(summary) }
        return result.next
    }

    /// Delivered records waiting for their ack.
    private struct PendingAck {
        var ids: [Int64]
        var lease: Lease
    }

    /// Forgets old idempotency keys, vacuums and truncates the WAL. It runs after the drain lock is released:
    /// releasing the lock is a write, and a write after the checkpoint would leave a `-wal` behind at rest.
    private func maintain() async throws(QueueError) {
        guard options.maintenanceAfterPass else { return }
        let maintenance = try await store.checkpointAndVacuum()
        logger.debug(
            "checkpointed and vacuumed",
            metadata: [
                "wal_bytes": "\(maintenance.walBytesBefore) -> \(maintenance.walBytesAfter)",
                "db_bytes": "\(maintenance.databaseBytesBefore) -> \(maintenance.databaseBytesAfter)",
            ])
    }

    private struct BatchResult {
        /// Delivered by the sink and not acked yet: the caller acks them with the next claim.
        var delivered: [Int64] = []
        var halt: SinkHalt?
        var allFailed = false
        var lastError: String?
    }

    /// Delivers one claimed batch and applies every outcome. When every record was delivered the ack is left to
    /// the caller (`BatchResult.delivered`), which commits it with the next claim.
    private func deliver(_ claim: Claim, summary: inout DrainSummary) async throws(QueueError) -> BatchResult {
        var outgoing: [OutgoingRecord] = []
        var invalid: [(id: Int64, reason: String)] = []
        for claimed in claim.records {
            switch OutgoingRecord.prepare(claimed) {
            case .success(let record): outgoing.append(record)
            case .failure(let error): invalid.append((claimed.id, "rejected before delivery: \(error)"))
            }
        }
        for (id, reason) in invalid {
            summary.dead += try await store.reject([id], lease: claim.lease, reason: reason)
        }
        guard !outgoing.isEmpty else { return BatchResult() }

        let report = await deliverRenewingLease(outgoing, lease: claim.lease)
        let cancelled = Task.isCancelled
        var result = BatchResult(halt: report.halt)
        var delivered: [Int64] = []
        var rejected: [String: [Int64]] = [:]
        var retries: [RetryGroup: [Int64]] = [:]
        for record in outgoing {
            switch report.outcomes[record.id] {
            case .delivered:
                delivered.append(record.id)
            case .rejected(let reason):
                rejected[reason, default: []].append(record.id)
            case .retry(let reason, let after, let counts):
                retries[RetryGroup(reason: reason, after: after, counts: counts), default: []].append(record.id)
            case nil:
                if cancelled {
                    // The pass was cancelled (a shutdown that ran out of time): hand the records back untouched
                    // now rather than leaving them leased until the lease expires.
                    retries[
                        RetryGroup(reason: "delivery cancelled", after: nil, counts: false, release: true),
                        default: []
                    ].append(record.id)
                } else if report.halt?.kind == .configuration {
                    retries[
                        RetryGroup(reason: report.halt?.reason ?? "", after: nil, counts: false, release: true),
                        default: []
                    ].append(record.id)
                } else {
                    let reason = report.halt?.reason ?? "the sink reported no outcome"
                    retries[RetryGroup(reason: reason, after: nil, counts: true), default: []].append(record.id)
                }
            }
        }
        if rejected.isEmpty, retries.isEmpty {
            // All delivered, the common case: the caller acks them together with the next claim.
            result.delivered = delivered
            return result
        }
        // Mixed outcomes: ack the delivered ones first, on their own, as nothing below may undo that.
        summary.delivered += try await store.ack(delivered, lease: claim.lease)
        for (reason, ids) in rejected {
            summary.dead += try await store.reject(ids, lease: claim.lease, reason: reason)
        }
        let attempts = Dictionary(outgoing.map { ($0.id, $0.attempts) }, uniquingKeysWith: { first, _ in first })
        for (group, ids) in retries {
            result.lastError = group.reason
            if group.release {
                _ = try await store.release(ids, lease: claim.lease)
                continue
            }
            // Saturating: attempts come from the queue file (range-checked at claim, but never trusted to be).
            let attempt = min(ids.compactMap { attempts[$0] }.max() ?? 0, Int.max - 1) + 1
            // A sink's hint (a Retry-After header) is outside input: keep it within the clock horizon so no
            // hint can overflow the clock arithmetic or park a record for good.
            let wait = min(max(1, group.after ?? options.backoff.delay(attempt: attempt)), Self.longestRetryWait)
            let nacked = try await store.nack(
                ids, lease: claim.lease, reason: group.reason, retryAt: WallClock.nowMilliseconds() + wait,
                countsAsAttempt: group.counts, maxAttempts: options.maxAttempts)
            summary.retried += nacked.retried.count
            summary.dead += nacked.dead.count
        }
        result.allFailed = delivered.isEmpty && rejected.isEmpty && !retries.isEmpty
        return result
    }

    /// WAL size above which a pass truncates it between batches: 8 MiB, twice the automatic checkpoint's.
    static let walCheckpointThreshold: Int64 = 8 * 1024 * 1024

    /// The longest a record is ever parked by one retry: the clock horizon (15 minutes), because a due time
    /// further ahead would read as a clock that went back. A longer `Retry-After` is simply asked again.
    static let longestRetryWait: Int64 = ClockHorizon.longestWaitMilliseconds

    private struct RetryGroup: Hashable {
        var reason: String
        var after: Int64?
        var counts: Bool
        var release = false
    }

    /// Awaits the sink while renewing the lease every third of its length, so a slow destination never lets the
    /// lease lapse (which would let the records be claimed, and delivered, twice).
    private func deliverRenewingLease(_ batch: [OutgoingRecord], lease: Lease) async -> DeliveryReport {
        let ids = batch.map(\.id)
        let store = self.store
        let sink = self.sink
        let logger = self.logger
        let interval = options.leaseMilliseconds / 3
        let leaseMilliseconds = options.leaseMilliseconds
        return await withTaskGroup(of: DeliveryReport?.self) { group in
            group.addTask { await sink.deliver(batch) }
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await Task.sleep(for: .milliseconds(interval))
                    } catch {
                        return nil  // cancelled: the delivery finished
                    }
                    do {
                        let (_, held) = try await store.renew(lease, ids: ids, leaseMilliseconds: leaseMilliseconds)
                        _ = try await store.acquireDrainLock(leaseMilliseconds: leaseMilliseconds)
                        logger.debug("renewed the lease", metadata: ["held": "\(held)", "claimed": "\(ids.count)"])
                        if held < ids.count {
                            logger.warning(
                                "lease lapsed for some records in flight; their late results will be discarded",
                                metadata: ["held": "\(held)", "claimed": "\(ids.count)"])
                        }
                    } catch {
                        // A busy file or a transient I/O error: keep trying at the next tick rather than let the
                        // lease run out while the sink is still working.
                        logger.warning("could not renew the lease; retrying", metadata: ["error": "\(error)"])
                    }
                }
                return nil
            }
            var report = DeliveryReport()
            while let next = await group.next() {
                if let next {
                    report = next
                    group.cancelAll()
                }
            }
            return report
        }
    }
}
