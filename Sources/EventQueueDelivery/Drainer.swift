import EventQueue
import Logging

/// The drain loop: claim batches under a lease, hand up to `maxInFlight` of them to the sink at once, and settle
/// each as it comes back, until nothing is claimable.
///
/// The claim never takes a user's record while an earlier one of that user is leased or waiting for a retry
/// (`QueueConsumer.claim`), so batches in flight never share a user. A record is deleted only once the sink
/// reported it delivered, so a crash redelivers at most the batches in flight; `commit`
/// (`Drainer+Settlement.swift`) acks them with the claims that replace them, in one transaction. Every reading of
/// time goes through `clock`, except the upkeep's quiet-writers measure (`QueueAdmin.maintainAfterPass`).
public struct Drainer: Sendable {
    public let store: QueueStore
    public let sink: any Sink
    public let options: DrainOptions
    public let logger: Logger
    public let clock: any DrainClock
    /// Whether the sink is up: kept across passes, read by the launch coordinator and the daemon's status.
    public let availability: SinkAvailabilityMonitor
    /// The key erasure grants are checked with, or why there is none: then each erasure is dead-lettered.
    public let erasureKey: Result<ErasureKey, ErasureProblem>
    /// Deliveries in flight, and users whose requests went unanswered: kept across passes (`InFlightLeases`).
    let inFlight: InFlightLeases

    public init(
        store: QueueStore, sink: any Sink, options: DrainOptions = DrainOptions(), logger: Logger,
        clock: any DrainClock = SystemDrainClock()
    ) {
        self.store = store
        self.sink = sink
        self.options = options
        self.logger = logger
        self.clock = clock
        availability = SinkAvailabilityMonitor(policy: options.availability, clock: clock, logger: logger)
        inFlight = InFlightLeases(unansweredHold: options.erasureHoldAfterUnanswered)
        erasureKey = ErasureKey.forVerifying(queuePath: store.path)
        if case .failure(let problem) = erasureKey {
            logger.warning("erasures will not be sent: \(problem)")
        }
    }

    /// Batches handed to the sink at once: the option, capped by what the sink serves.
    public var effectiveMaxInFlight: Int { max(1, min(options.maxInFlight, sink.maxConcurrentDeliveries)) }

    /// Records per claim: `batchSize`, rounded down to whole requests of the sink when several batches are in
    /// flight (the default 100 claims 75 for Braze), so every request goes out full.
    public var claimSize: Int {
        guard effectiveMaxInFlight > 1, let perRequest = sink.recordsPerRequest, perRequest > 0,
            options.batchSize > perRequest
        else { return options.batchSize }
        return options.batchSize / perRequest * perRequest
    }

    /// Records in a probe: one request's worth (the sink's `recordsPerRequest`), at most a claim.
    public var probeSize: Int { min(claimSize, sink.recordsPerRequest ?? claimSize) }

    /// Runs one pass. `progress` is called once per settled batch, after the commit that acked it; `shouldStop`
    /// is checked before every claim (the batches in flight still finish). On cancellation the outcomes reported
    /// are applied and the rest is released.
    public func drain(
        progress: (@Sendable (DrainSummary) async -> Void)? = nil,
        shouldStop: @Sendable () -> Bool = { false }
    ) async throws(QueueError) -> DrainSummary {
        let (leaseMilliseconds, clock) = (options.leaseMilliseconds, self.clock)
        availability.passStarting()
        if availability.admission() == .closed, let halt = availability.halt() {
            logger.debug("the sink is unavailable and no probe is due; nothing claimed", metadata: ["halt": "\(halt)"])
            var summary = DrainSummary()
            summary.halt = halt
            summary.remaining = try await store.stats(now: clock.wallMilliseconds())
            return summary
        }
        // Every `now` is read on the store's executor: a wait for it must not shorten the lease or lock written.
        let (holder, takenOver, startedAt) = try await store.withConsumer { consumer throws(QueueError) in
            let now = clock.wallMilliseconds()
            if let holder = try consumer.acquireDrainLock(leaseMilliseconds: leaseMilliseconds, now: now) {
                return (Optional(holder), 0, now)
            }
            // A daemon killed on this host left its batches leased: hand them back now, not after the lease.
            return (nil, try consumer.releaseLeasesOfDeadProcesses(), now)
        }
        if let holder {
            logger.info("another drainer holds the drain lock", metadata: ["owner": "\(holder.owner)"])
            var summary = DrainSummary()
            summary.lockHolder = holder
            summary.remaining = try await store.stats(now: startedAt)
            return summary
        }
        if takenOver > 0 {
            logger.notice(
                "released the records leased by a process that no longer runs on this host",
                metadata: ["records": "\(takenOver)"])
        }
        try await enforceLimits(atPassStart: true)
        var pass = PassState(lockRenewedAt: clock.monotonic())
        let turnsAtStart = try await store.withConsumer { consumer throws(QueueError) in consumer.admin.writerTurns }
        do {
            try await runPass(&pass, progress: progress, shouldStop: shouldStop)
        } catch {
            try? await store.withConsumer { consumer throws(QueueError) in try consumer.releaseDrainLock() }
            throw error
        }
        try await store.withConsumer { consumer throws(QueueError) in try consumer.releaseDrainLock() }
        try await enforceLimits(atPassStart: false)
        try await maintain(turnsAtPassStart: turnsAtStart)
        var summary = pass.summary
        if summary.halt == nil { summary.halt = availability.halt() }
        summary.inFlight = 0
        summary.remaining = try await store.stats(now: pass.lastClaimAt ?? clock.wallMilliseconds())
        logger.info(
            "drain pass finished",
            metadata: [
                "delivered": "\(summary.delivered)", "retried": "\(summary.retried)", "dead": "\(summary.dead)",
                "batches": "\(summary.batches)", "result": "\(summary.result.rawValue)",
            ])
        return summary
    }

    struct PassState {
        var summary = DrainSummary()
        /// When the last claim ran: the next retry is counted from it (from "now", a record that came due after
        /// the claim would be neither claimed nor due later, and no pass would be scheduled for it).
        var lastClaimAt: Int64?
        var deliveriesInFlight = 0
        /// The last claim found nothing; claim again only once a batch settles (its users may be free now).
        var exhausted = false
        /// When the drain lock was last renewed, on the drain clock's monotonic side.
        var lockRenewedAt: Duration
        /// Delivered records of batches settled since the last commit, acked with the next claims.
        var pendingAcks: [(ids: [Int64], lease: Lease)] = []
        /// Batches settled since progress was last reported: one report each.
        var unreported = 0
        /// After a short claim, the most batches to keep in flight for `ceilingSpan`: asking for more would only
        /// walk the whole backlog to come back short again. It lapses so that users who arrive later get the
        /// full window.
        var ceiling: (batches: Int, until: Duration)?

        var stopping: Bool { summary.halt != nil }
    }

    /// Opens deliveries while there is room and something to claim, then settles every result that is in
    /// (`FinishedDeliveries`), so batches that came back during the last commit are acked and replaced together.
    private func runPass(
        _ pass: inout PassState, progress: (@Sendable (DrainSummary) async -> Void)?, shouldStop: @Sendable () -> Bool
    ) async throws(QueueError) {
        let maxInFlight = effectiveMaxInFlight
        let (sink, store, logger, clock) = (self.sink, self.store, self.logger, self.clock)
        let leaseMilliseconds = options.leaseMilliseconds
        let finished = FinishedDeliveries()
        let inFlight = self.inFlight
        let failure: QueueError? = await withTaskGroup(of: Void.self) { group in
            do throws(QueueError) {
                while true {
                    let admission = availability.admission()
                    var room = maxInFlight - pass.deliveriesInFlight
                    var limit = claimSize
                    switch admission {
                    case .open: break
                    case .probe:
                        // One probe, alone: what was in flight when the sink went down finishes first.
                        room = pass.deliveriesInFlight == 0 ? 1 : 0
                        limit = probeSize
                    case .closed:
                        room = 0
                    }
                    if admission == .open, let ceiling = pass.ceiling {
                        if clock.monotonic() < ceiling.until {
                            room = min(room, ceiling.batches - pass.deliveriesInFlight)
                        } else {
                            pass.ceiling = nil
                        }
                    }
                    if room > 0, !pass.exhausted, !pass.stopping, !shouldStop(), !Task.isCancelled {
                        try await renewLockIfDue(&pass)
                        let probe = admission == .probe
                        let deliveries =
                            pass.stopping
                            ? [] : try await claimNext(room, &pass, limit: limit, probe: probe, progress: progress)
                        if probe {
                            if deliveries.isEmpty { availability.nothingToProbe() } else { availability.probeStarted() }
                        }
                        if deliveries.count < room {
                            pass.exhausted = true
                            let batches = max(1, pass.deliveriesInFlight + deliveries.count)
                            pass.ceiling = (batches, clock.monotonic() + Self.ceilingSpan)
                        }
                        for delivery in deliveries {
                            pass.deliveriesInFlight += 1
                            pass.summary.inFlight += delivery.records.count
                            inFlight.started(delivery.claim.lease.token)
                            group.addTask {
                                finished.put(
                                    await delivery.run(
                                        sink: sink, store: store, leaseMilliseconds: leaseMilliseconds,
                                        clock: clock, logger: logger, inFlight: inFlight))
                            }
                        }
                    }
                    // No claim follows at once: ack what was delivered now, not with a later claim.
                    try await commit(&pass, progress: progress)
                    var results = finished.takeAll()
                    while results.isEmpty, pass.deliveriesInFlight > 0 {
                        await group.next()
                        results = finished.takeAll()
                    }
                    if results.isEmpty { break }
                    for (index, result) in results.enumerated() {
                        pass.deliveriesInFlight -= 1
                        pass.summary.inFlight -= result.delivery.records.count
                        do throws(QueueError) {
                            try await settle(result, pass: &pass)
                        } catch {
                            // Settled below with the deliveries still in flight.
                            for result in results[(index + 1)...] { finished.put(result) }
                            throw error
                        }
                    }
                    pass.exhausted = false
                    // A long pass (a big backlog) keeps the WAL in check as it goes, not only at the end.
                    try await store.withConsumer { consumer throws(QueueError) in
                        _ = try consumer.admin.truncateWALIfLarger(than: Self.walCheckpointThreshold)
                    }
                }
                return nil
            } catch {
                // A claim or an ack failed: stop the deliveries, hand their records back, and try to ack what was
                // delivered so it is not delivered again.
                group.cancelAll()
                while await group.next() != nil {}
                for result in finished.takeAll() {
                    pass.summary.inFlight -= result.delivery.records.count
                    try? await settle(result, pass: &pass)
                }
                _ = try? await commit(&pass, progress: nil)
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Renews the drain lock once a third of its lease has passed (a write: not before every claim).
    private func renewLockIfDue(_ pass: inout PassState) async throws(QueueError) {
        guard clock.elapsed(since: pass.lockRenewedAt) >= .milliseconds(options.leaseMilliseconds / 3) else { return }
        let (leaseMilliseconds, clock) = (options.leaseMilliseconds, self.clock)
        if let holder = try await store.withConsumer({ consumer throws(QueueError) in
            try consumer.acquireDrainLock(leaseMilliseconds: leaseMilliseconds, now: clock.wallMilliseconds())
        }) {
            // Only possible if this pass stalled for longer than the lease and another drainer took over.
            pass.summary.halt = SinkHalt(kind: .unavailable, reason: "lost the drain lock to \(holder.owner)")
            return
        }
        pass.lockRenewedAt = clock.monotonic()
    }

    /// Claims up to `count` batches (with the pending acks: `commit`), dead-letters what cannot be sent, and
    /// returns the rest as deliveries.
    private func claimNext(
        _ count: Int, _ pass: inout PassState, limit: Int, probe: Bool,
        progress: (@Sendable (DrainSummary) async -> Void)?
    ) async throws(QueueError) -> [LeasedDelivery] {
        var deliveries: [LeasedDelivery] = []
        while deliveries.count < count {
            let wanted = count - deliveries.count
            // Probes cycle through the oldest request's worth, its first half of users, its later half: if one
            // of the oldest records makes the sink fail, a probe without it still finds the sink up.
            let cycle = availability.snapshot.probes % 3
            let claimedFrom = ContinuousClock.now
            let claims = try await commit(
                &pass, claiming: wanted, limit: limit, probeHalf: probe && cycle > 0 ? cycle - 1 : nil,
                progress: progress)
            for claim in claims {
                pass.summary.batches += 1
                var outgoing: [OutgoingRecord] = []
                let clock = self.clock
                for claimed in claim.records {
                    switch OutgoingRecord.prepare(claimed, erasureKey: erasureKey) {
                    case .success(let record): outgoing.append(record)
                    case .failure(let error):
                        if claimed.erasure != nil {
                            logger.warning(
                                "an erasure was dead-lettered, not sent to Braze",
                                metadata: ["id": "\(claimed.id)", "reason": "\(error)"])
                        }
                        let reason = "rejected before delivery: \(error)"
                        pass.summary.dead += try await store.withConsumer { consumer throws(QueueError) in
                            try consumer.reject(
                                [claimed.id], lease: claim.lease, reason: reason, now: clock.wallMilliseconds())
                        }
                    }
                }
                if !outgoing.isEmpty {
                    deliveries.append(
                        LeasedDelivery(claim: claim, records: outgoing, probe: probe, claimedFrom: claimedFrom))
                }
            }
            // Fewer or short claims: the end of what is claimable now. (An all-invalid claim is replaced.)
            if claims.isEmpty { break }
            let short = claims.count < wanted || claims[claims.count - 1].records.count < limit
            if short, !deliveries.isEmpty { break }
        }
        return deliveries
    }

    /// Forgets old idempotency keys, vacuums and truncates the WAL unless writers wrote during the pass
    /// (`QueueAdmin.maintainAfterPass`); after the lock's release, a write that would leave a `-wal` behind.
    private func maintain(turnsAtPassStart: UInt64?) async throws(QueueError) {
        guard options.maintenanceAfterPass else { return }
        let clock = self.clock
        var done = try await store.withConsumer { consumer throws(QueueError) in
            try consumer.admin.maintainAfterPass(turnsAtPassStart: turnsAtPassStart, now: clock.wallMilliseconds())
        }
        if done == nil {
            // Once more after the quiet time: a writer may have written just before the pass ended.
            try? await Task.sleep(for: .nanoseconds(QueueAdmin.upkeepRetryNanoseconds))
            done = try await store.withConsumer { consumer throws(QueueError) in
                try consumer.admin.maintainAfterPass(turnsAtPassStart: nil, now: clock.wallMilliseconds())
            }
        }
        guard let maintenance = done else {
            logger.debug("upkeep waits: writers wrote during the pass")
            return
        }
        logger.debug(
            "checkpointed and vacuumed",
            metadata: [
                "wal_bytes": "\(maintenance.walBytesBefore) -> \(maintenance.walBytesAfter)",
                "db_bytes": "\(maintenance.databaseBytesBefore) -> \(maintenance.databaseBytesAfter)",
            ])
    }

    /// How long the concurrency found after a short claim holds (`PassState.ceiling`).
    static let ceilingSpan: Duration = .seconds(5)

    /// WAL size above which a pass truncates it between batches: 8 MiB, twice the automatic checkpoint's.
    static let walCheckpointThreshold: Int64 = 8 * 1024 * 1024
}
