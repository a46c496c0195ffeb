import EventQueue
import Logging

/// The drain loop: claim batches under a lease, hand up to `maxInFlight` of them to the sink at once, and settle
/// each as it comes back; repeat until nothing is claimable. Records enqueued while the pass runs are delivered
/// by the same pass.
///
/// Why the concurrency lives here and not in the sink: the queue already refuses to claim a user's record while
/// an earlier record of that user is leased or waiting for a retry (`QueueConsumer.claim`). So two batches in
/// flight never share a user, and a user's later record can never overtake one that waits for a retry, whatever
/// the sink does; per-user order across concurrent requests costs nothing extra. A sink then stays one simple
/// call per batch (`Sink.deliver`), delivering its batch in order; it only says how many calls it serves at
/// once (`maxConcurrentDeliveries`: files 1, Braze many) and, if it wants, how many records fill one request.
///
/// Crash-safe by construction: a record is deleted only after the sink reported it delivered, and each batch
/// is acked as soon as it comes back, so a crash at any point redelivers at most the batches in flight
/// (`maxInFlight` × the claim size). The batches that came back while the connection was busy are acked
/// together, with the claims that replace them, in one transaction (group commit: one fsync for all).
///
/// Outages (issue 30): a failure that says nothing about the record (`RetryCause.destination`) costs it no attempt
/// and no backoff; it is due again at once, and `availability` (`SinkAvailabilityMonitor`, shared by every pass of
/// this drainer) decides when anything goes out: after a few such failures in a row the sink is unavailable, and
/// passes claim nothing but one small probe at a time until the sink answers again.
///
/// Reading guide: `runPass` opens deliveries and waits for them; `settle` writes a finished batch's dead
/// letters, retries and releases and queues its delivered records for the ack; `commit` is the one place that
/// acks (with the next claims, in one transaction) and the one place that reports progress (both in
/// `Drainer+Settlement.swift`); `Settlement` decides each record's next state; `PassState` is the pass's state, in
/// one value. Every reading of the time in the pass goes through `clock` (the wall clock for the file, the monotonic
/// one for waits), so tests advance it instead of sleeping. The upkeep after the pass (`maintain`) is the exception:
/// whether writers wrote lately is the writers' line's own measure on the real monotonic clock
/// (`QueueAdmin.maintainAfterPass`), and its one second try waits on the real clock.
public struct Drainer: Sendable {
    public let store: QueueStore
    public let sink: any Sink
    public let options: DrainOptions
    public let logger: Logger
    public let clock: any DrainClock
    /// Whether the sink is up: kept across passes, read by the launch coordinator and the daemon's status.
    public let availability: SinkAvailabilityMonitor
    /// The key erasure grants are checked with (`ErasureKey.forVerifying`), or why there is none: then no erasure
    /// is sent (each is dead-lettered with the reason; `queuectl dead retry` it under a consumer that has the key).
    public let erasureKey: Result<ErasureKey, ErasureProblem>
    /// Deliveries in flight, and users whose requests went unanswered: kept across passes, since a request that
    /// timed out in one pass holds its users' erasures in the next (`InFlightLeases`).
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

    /// Records per claim. One batch at a time: `batchSize`. Several: a `batchSize` above one request of the
    /// sink is rounded down to whole requests (the default 100 claims 75 for Braze), so every request goes out
    /// full and a batch is one request or a few; a smaller one is taken as asked.
    public var claimSize: Int {
        guard effectiveMaxInFlight > 1, let perRequest = sink.recordsPerRequest, perRequest > 0,
            options.batchSize > perRequest
        else { return options.batchSize }
        return options.batchSize / perRequest * perRequest
    }

    /// Records in a probe: one request's worth (the sink's `recordsPerRequest`), at most a claim.
    public var probeSize: Int { min(claimSize, sink.recordsPerRequest ?? claimSize) }

    /// Runs one pass. `progress` is called once per settled batch, after the commit that acked it (batches
    /// settled together report the same summary); `shouldStop` is checked before every claim
    /// (a graceful shutdown stops claiming but lets the batches in flight finish). When the task is cancelled,
    /// the outcomes the sink did report are applied and the records it reported nothing for are released at once.
    /// While the sink is unavailable and no probe is due, the pass claims nothing and ends at once, its halt
    /// saying so (`SinkAvailabilityMonitor.halt`).
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
        // The clock is read on the store's executor, just before the statement: a wait for the executor must not
        // shorten the lease or the lock it writes. The same holds for every other `now` below.
        let (holder, takenOver, startedAt) = try await store.withConsumer { consumer throws(QueueError) in
            let now = clock.wallMilliseconds()
            if let holder = try consumer.acquireDrainLock(leaseMilliseconds: leaseMilliseconds, now: now) {
                return (Optional(holder), 0, now)
            }
            // A daemon killed on this host left its batches leased: hand them back now rather than after the
            // lease (a minute by default); those users' later records wait for them.
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

    /// The state of one pass, in one value.
    struct PassState {
        var summary = DrainSummary()
        /// When the last claim ran: the next retry is counted from it. A record that came due between that
        /// claim and the final statistics was not claimed, and counting from "now" would call it neither due
        /// later nor claimed: no pass would be scheduled for it.
        var lastClaimAt: Int64?
        /// Deliveries handed to the sink and not settled yet.
        var deliveriesInFlight = 0
        /// The last claim found nothing; claim again only once a batch settles (its users may be free now).
        var exhausted = false
        /// When the drain lock was last renewed, on the drain clock's monotonic side.
        var lockRenewedAt: Duration
        /// The delivered records of the batches that settled since the last commit: acked together with the next
        /// claims, in one transaction (`QueueConsumer.ackAndClaim`), or on their own when no claim follows.
        var pendingAcks: [(ids: [Int64], lease: Lease)] = []
        /// Batches settled since progress was last reported: one report each.
        var unreported = 0
        /// After a short claim (every user with a claimable record is in flight already), the most batches to
        /// keep in flight for the next few seconds (`ceilingSpan`): asking for more only walks the whole backlog
        /// to come back short again (2,000 users and 32 requests of 75 in flight: every claim read every live
        /// row). It only ever lowers concurrency; it lapses so that users who arrive later get the full window.
        var ceiling: (batches: Int, until: Duration)?

        var stopping: Bool { summary.halt != nil }
    }

    /// Opens deliveries while there is room and something to claim, then settles each as it finishes.
    ///
    /// A finished delivery puts its result in `finished` before its task ends, so after waiting for one the loop
    /// takes every result that is in: the batches that came back while the last commit ran are settled and
    /// acked together, and the same transaction claims their replacements.
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
                            // Nothing claimable to probe with: nothing is at stake, and the next delivery will tell.
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
                            finished.put(contentsOf: results[(index + 1)...])
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
                // A claim or an ack failed (a busy file, an I/O error). Stop the deliveries in flight, hand their
                // records back, and try to ack what was delivered so it is not delivered again.
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

    /// Renews the drain lock once a third of its lease has passed (it is a write transaction: not before every
    /// claim). Deliveries in flight renew it too (`LeasedDelivery`).
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

    /// Claims up to `count` batches (acking the settled batches' deliveries in the same transaction: `commit`),
    /// dead-letters what cannot be sent, and returns the rest as deliveries; fewer than `count` when the queue
    /// has no more claimable records now.
    private func claimNext(
        _ count: Int, _ pass: inout PassState, limit: Int, probe: Bool,
        progress: (@Sendable (DrainSummary) async -> Void)?
    ) async throws(QueueError) -> [LeasedDelivery] {
        var deliveries: [LeasedDelivery] = []
        while deliveries.count < count {
            let wanted = count - deliveries.count
            // Probes cycle through the oldest request's worth, its first half of users, its later half (issue 40
            // #2): if one of the oldest records is what makes the sink fail, a probe without it still finds the sink
            // up, and the failing request is then split down to that record (`BrazeBatchDelivery`).
            let cycle = availability.snapshot.probes % 3
            let claimedFrom = ContinuousClock.now
            let claims = try await commit(
                &pass, claiming: wanted, limit: limit, probeHalf: probe && cycle > 0 ? cycle - 1 : nil,
                progress: progress)
            for claim in claims {
                pass.summary.batches += 1
                var outgoing: [OutgoingRecord] = []
                var invalid: [(id: Int64, reason: String)] = []
                for claimed in claim.records {
                    switch OutgoingRecord.prepare(claimed, erasureKey: erasureKey) {
                    case .success(let record): outgoing.append(record)
                    case .failure(let error):
                        invalid.append((claimed.id, "rejected before delivery: \(error)"))
                        if claimed.erasure != nil {
                            logger.warning(
                                "an erasure was dead-lettered, not sent to Braze",
                                metadata: ["id": "\(claimed.id)", "reason": "\(error)"])
                        }
                    }
                }
                let clock = self.clock
                for (id, reason) in invalid {
                    pass.summary.dead += try await store.withConsumer { consumer throws(QueueError) in
                        try consumer.reject([id], lease: claim.lease, reason: reason, now: clock.wallMilliseconds())
                    }
                }
                if !outgoing.isEmpty {
                    deliveries.append(
                        LeasedDelivery(claim: claim, records: outgoing, probe: probe, claimedFrom: claimedFrom))
                }
            }
            // Fewer claims than asked, or a short one: the walk reached the end of what is claimable now. (A
            // claim whose records were all invalid is simply replaced.)
            if claims.isEmpty { break }
            let short = claims.count < wanted || claims[claims.count - 1].records.count < limit
            if short, !deliveries.isEmpty { break }
        }
        return deliveries
    }

    /// Forgets old idempotency keys, vacuums and truncates the WAL, unless writers wrote during the pass and it
    /// can wait (`QueueAdmin.maintainAfterPass`). It runs after the drain lock is released: releasing the lock is
    /// a write, and a write after the checkpoint would leave a `-wal` behind at rest.
    private func maintain(turnsAtPassStart: UInt64?) async throws(QueueError) {
        guard options.maintenanceAfterPass else { return }
        let clock = self.clock
        var done = try await store.withConsumer { consumer throws(QueueError) in
            try consumer.admin.maintainAfterPass(turnsAtPassStart: turnsAtPassStart, now: clock.wallMilliseconds())
        }
        if done == nil {
            // Once more after the quiet time: the last writer may have written just before the pass ended.
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
