import EventQueue
import Logging
import Synchronization

/// How a pass holds an erasure (or an identity call) back until Braze can no longer apply an earlier request of
/// its users (docs/OPERATING.md, "Erasing a user").
///
/// `forget` names the leases of a user's records in flight in the erasure's `after`. The erasure's delivery waits,
/// without polling, until no delivery of this pass under one of them is in flight; such a delivery was claimed
/// before the forget and waits for nothing, so no two deliveries wait for each other. An ended request is not
/// always an answered one (a timeout, a 502/504), so a delivery that ended without an answer for some records
/// holds its users' erasures for `unansweredHold`, across passes. Another consumer's lease is waited out to its
/// recorded end (its drainer sends nothing past it: `DeliveryLease`), plus the same hold.
final class InFlightLeases: Sendable {
    private struct Waiter {
        var tokens: Set<String>
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var inFlight: Set<String> = []
        var waiters: [UInt64: Waiter] = [:]
        /// Waits cancelled before they registered (the cancellation handler can run first).
        var cancelled: Set<UInt64> = []
        var nextWaiter: UInt64 = 0
        /// Users whose records went in an unanswered request, and until when (monotonic) Braze may apply it.
        var holds: [String: Duration] = [:]
    }

    private let state = Mutex(State())
    /// How long an unanswered request holds its users' erasures (`DrainOptions.erasureHoldAfterUnanswered`).
    let unansweredHold: Duration

    init(unansweredHold: Duration = .zero) {
        self.unansweredHold = unansweredHold
    }

    /// Holds the erasures of the users of `records` whose request went unanswered, for `unansweredHold`.
    func holdUsers(
        of records: [OutgoingRecord], unansweredIn report: DeliveryReport, anyUnanswered: Bool, now: Duration
    ) {
        guard unansweredHold > .zero else { return }
        var users: Set<String> = []
        for record in records where record.erasure == nil {
            switch report.outcomes[record.id] {
            case .retry(_, _, .destination)?: users.insert(record.userKey)
            case nil where report.halt?.kind != .configuration: users.insert(record.userKey)
            default: if anyUnanswered { users.insert(record.userKey) }
            }
        }
        guard !users.isEmpty else { return }
        let until = now + unansweredHold
        state.withLock { state in
            state.holds = state.holds.filter { $0.value > now }
            for user in users { state.holds[user] = max(state.holds[user] ?? until, until) }
        }
    }

    /// The monotonic time until which an erasure of `users` must wait for unanswered requests, if later than `now`.
    func heldUntil(_ users: [String], now: Duration) -> Duration? {
        let until = state.withLock { state in users.compactMap { state.holds[$0] }.max() }
        guard let until, until > now else { return nil }
        return until
    }

    /// A delivery under `token` is handed to the sink: call before its task starts, so a later erasure sees it.
    func started(_ token: String) {
        state.withLock { _ = $0.inFlight.insert(token) }
    }

    /// The delivery under `token` has ended: the waits for nothing else resume.
    func ended(_ token: String) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.inFlight.remove(token)
            var ready: [CheckedContinuation<Bool, Never>] = []
            for (id, var waiter) in state.waiters where waiter.tokens.contains(token) {
                waiter.tokens.remove(token)
                if waiter.tokens.isEmpty {
                    state.waiters[id] = nil
                    ready.append(waiter.continuation)
                } else {
                    state.waiters[id] = waiter
                }
            }
            return ready
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Whether a delivery under `token` is in flight (tests).
    func isInFlight(_ token: String) -> Bool {
        state.withLock { $0.inFlight.contains(token) }
    }

    /// Returns once no delivery under one of `tokens` is in flight: true, or false when cancelled first.
    func waitUntilEnded(_ tokens: [String]) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if state.cancelled.remove(id) != nil { return false }
                    let waiting = Set(tokens).intersection(state.inFlight)
                    if waiting.isEmpty { return true }
                    state.waiters[id] = Waiter(tokens: waiting, continuation: continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                state.cancelled.insert(id)
                return nil
            }
            waiter?.continuation.resume(returning: false)
        }
    }
}

extension LeasedDelivery {
    /// Hands a batch to the sink: its records to `deliver`, then its erasures to `erase` once the deliveries they
    /// wait for have ended (`InFlightLeases`).
    static func send(
        _ batch: [OutgoingRecord], to sink: any Sink, inFlight: InFlightLeases, clock: any DrainClock, logger: Logger
    ) async -> DeliveryReport {
        guard !batch.isEmpty else { return DeliveryReport() }
        // An identity call waits out its users' unanswered requests as an erasure does: Braze may still apply a
        // timed-out track request of the alias after the identify merged it away. The rest goes first.
        let calls = batch.filter { $0.erasure == nil && $0.kind.isIdentityCall }
        if !calls.isEmpty, let until = inFlight.heldUntil(calls.flatMap(\.namedUsers), now: clock.monotonic()) {
            let held = Set(calls.map(\.id))
            let rest = batch.filter { !held.contains($0.id) }
            let report = await send(rest, to: sink, inFlight: inFlight, clock: clock, logger: logger)
            if let stopped = stopped(report, held: calls.map(\.id)) { return stopped }
            return await handOver(
                calls.count, after: report, holdingUntil: until,
                "holding an identity call until Braze can no longer apply an unanswered request of its users",
                clock: clock, logger: logger
            ) { await sink.deliver(calls) }
        }
        let erasures = batch.compactMap(\.erasure)
        guard !erasures.isEmpty else { return await sink.deliver(batch) }
        let records = batch.filter { $0.erasure == nil }
        let report = records.isEmpty ? DeliveryReport() : await sink.deliver(records)
        if let stopped = stopped(report, held: erasures.map(\.id)) { return stopped }
        let waitsFor = erasures.flatMap(\.waitsFor)
        if waitsFor.contains(where: inFlight.isInFlight) {
            logger.info(
                "holding an erasure until the requests of the user's forgotten records are answered",
                metadata: ["erasures": "\(erasures.count)"])
        }
        guard await inFlight.waitUntilEnded(waitsFor) else { return report }
        // Then the unanswered requests of the users, and the leases of other consumers (see `InFlightLeases`).
        let now = clock.monotonic()
        var until = inFlight.heldUntil(batch.filter { $0.erasure != nil }.map(\.userKey), now: now) ?? now
        let own = DeliveryLease.current?.consumer
        func foreign(_ token: String) -> Bool { String(token.prefix { $0 != "#" }) != own }
        for erasure in erasures where erasure.waitsFor.contains(where: foreign) {
            until = max(until, now + inFlight.foreignLeaseWait(erasure, nowMilliseconds: clock.wallMilliseconds()))
        }
        return await handOver(
            erasures.count, after: report, holdingUntil: until,
            "holding an erasure until Braze can no longer apply an unanswered request of the user", clock: clock,
            logger: logger
        ) { await sink.erase(erasures) }
    }

    /// The report of what was sent first, when the sink stopped there: the held rows cost no attempt.
    private static func stopped(_ report: DeliveryReport, held ids: [Int64]) -> DeliveryReport? {
        guard let halt = report.halt else { return nil }
        var report = report
        if halt.kind != .configuration {
            for id in ids { report.outcomes[id] = .retry(reason: "not sent: \(halt.reason)", cause: .destination) }
        }
        return report
    }

    /// Adds what `send` reports for the `count` held rows to `report`, once `until` (monotonic) has passed,
    /// saying why it waits; cancelled while waiting, they are handed back unsent.
    private static func handOver(
        _ count: Int, after report: DeliveryReport, holdingUntil until: Duration, _ message: Logger.Message,
        clock: any DrainClock, logger: Logger, _ send: () async -> DeliveryReport
    ) async -> DeliveryReport {
        let left = until - clock.monotonic()
        if left > .zero {
            logger.info(message, metadata: ["count": "\(count)", "wait_ms": "\(left.wholeMilliseconds)"])
            do {
                try await clock.sleep(for: left)
            } catch {
                return report
            }
        }
        var report = report
        report.append(await send())
        return report
    }
}

extension InFlightLeases {
    /// How long an erasure waits for the leases of its `after` held by another consumer: until the latest ends
    /// (recorded by the forget; else the longest lease possible) plus `unansweredHold`, never more than the
    /// longest lease plus the hold, so no clock step or stored value can stretch or overflow it.
    func foreignLeaseWait(_ erasure: OutgoingErasure, nowMilliseconds: Int64) -> Duration {
        let longest = ClockHorizon.longestWaitMilliseconds
        let end = erasure.leasedUntilMilliseconds ?? ClockHorizon.latestPlausible(after: erasure.createdAtMilliseconds)
        let (left, overflow) = end.subtractingReportingOverflow(nowMilliseconds)
        let leaseLeft = overflow ? (end > 0 ? longest : 0) : min(max(0, left), longest)
        return .milliseconds(leaseLeft) + unansweredHold
    }
}

extension OutgoingRecord {
    /// The filing keys of the users an identity call names (its own and `records.other_user_key`'s); one otherwise.
    var namedUsers: [String] {
        [userKey] + (UserIdentity(filingOther: object, kind: kind).map { [$0.orderingKey] } ?? [])
    }
}
