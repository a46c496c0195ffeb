import EventQueue
import Logging
import Synchronization

/// One batch handed to the sink while its lease (and the drain lock) is renewed every third of the lease, so a
/// slow destination never lets it lapse (the records would be claimed, and delivered, twice).
struct LeasedDelivery: Sendable {
    var claim: Claim
    var records: [OutgoingRecord]
    /// The sink is unavailable and this batch is the one probe (`SinkAvailability`).
    var probe = false
    /// Read before the claim, so the `DeliveryLease` ends no later than the lease in the file.
    var claimedFrom = ContinuousClock.now

    /// What came back: the sink's report, and whether the task was cancelled meanwhile.
    struct Finished: Sendable {
        var delivery: LeasedDelivery
        var report: DeliveryReport
        var cancelled: Bool
    }

    /// Delivers the batch; `inFlight` counts it as ended once it returns.
    func run(
        sink: any Sink, store: QueueStore, leaseMilliseconds: Int64, clock: any DrainClock, logger: Logger,
        inFlight: InFlightLeases
    ) async -> Finished {
        let ids = records.map(\.id)
        let lease = claim.lease
        defer { inFlight.ended(lease.token) }
        let batch = records
        let interval = max(1, leaseMilliseconds / 3)
        let deadline = DeliveryLease(
            consumer: String(lease.token.prefix { $0 != "#" }), end: claimedFrom + .milliseconds(leaseMilliseconds))
        let report = await withTaskGroup(of: DeliveryReport?.self) { group in
            group.addTask {
                await DeliveryLease.$current.withValue(deadline) {
                    await Self.send(batch, to: sink, inFlight: inFlight, clock: clock, logger: logger)
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    do {
                        try await clock.sleep(for: .milliseconds(interval))
                    } catch {
                        return nil  // cancelled: the delivery finished
                    }
                    do {
                        let renewedFrom = ContinuousClock.now
                        let (held, _) = try await store.withConsumer { consumer throws(QueueError) in
                            // Read on the store's executor: a wait for it must not shorten the renewed lease.
                            let now = clock.wallMilliseconds()
                            var renewed = lease
                            let held = try consumer.renew(
                                &renewed, ids: ids, leaseMilliseconds: leaseMilliseconds, now: now)
                            return (held, try consumer.acquireDrainLock(leaseMilliseconds: leaseMilliseconds, now: now))
                        }
                        logger.debug("renewed the lease", metadata: ["held": "\(held)", "claimed": "\(ids.count)"])
                        if held == ids.count { deadline.extend(to: renewedFrom + .milliseconds(leaseMilliseconds)) }
                        if held < ids.count {
                            logger.warning(
                                "lease lapsed for some records in flight; their late results will be discarded",
                                metadata: ["held": "\(held)", "claimed": "\(ids.count)"])
                        }
                    } catch {
                        // A busy file or an I/O error: try again at the next tick.
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
        let cancelled = Task.isCancelled
        // Before `ended` (deferred) wakes an erasure that waits for this lease: it must see the hold.
        inFlight.holdUsers(
            of: records, unansweredIn: report, anyUnanswered: cancelled || deadline.hadUnansweredRequest,
            now: clock.monotonic())
        return Finished(delivery: self, report: report, cancelled: cancelled)
    }
}

/// Where deliveries put what came back, so the drain loop can take every result that is in at once (a task group
/// cannot say "what else is done?") and settle, ack and replace them in one transaction.
final class FinishedDeliveries: Sendable {
    private let results = Mutex<[LeasedDelivery.Finished]>([])

    func put(_ finished: LeasedDelivery.Finished) {
        results.withLock { $0.append(finished) }
    }

    /// Every result put since the last call, in the order they came back.
    func takeAll() -> [LeasedDelivery.Finished] {
        results.withLock { results in
            defer { results.removeAll(keepingCapacity: true) }
            return results
        }
    }
}
