import EventQueue
import Logging
import Synchronization

/// How a pass holds an erasure back until the requests it must follow have been answered.
///
/// `forget` deletes a user's records in flight and names their leases in the erasure's `after`: the claim's per-user
/// rule no longer sees those records, so the erasure can be claimed while one of their requests is still at Braze.
/// The drain lock means one pass per file at a time, so such a lease belongs either to this pass (its delivery is in
/// flight here) or to a process that died (its request is over). The erasure's delivery therefore keeps its lease
/// (renewed like any other, `LeasedDelivery`) and waits, without polling, until no delivery of this pass under one
/// of those leases is in flight; then the sink's `erase` runs. A wait only ever points at a delivery claimed before
/// the forget, which waits for nothing of the kind, so no two deliveries can wait for each other.
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
    }

    private let state = Mutex(State())

    /// A delivery under `token` is handed to the sink: call before its task starts, so that a later claim's
    /// erasure sees it.
    func started(_ token: String) {
        state.withLock { _ = $0.inFlight.insert(token) }
    }

    /// The delivery under `token` has ended (the sink answered, or it was cancelled): waits for nothing else
    /// resume.
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

    /// Returns once no delivery under one of `tokens` is in flight: true, or false when the task was cancelled
    /// first (a shutdown out of time: the erasure is then handed back unsent).
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
    /// wait for have ended (`InFlightLeases`). A batch without erasures is one `deliver` call, as before.
    static func send(
        _ batch: [OutgoingRecord], to sink: any Sink, inFlight: InFlightLeases, logger: Logger
    ) async -> DeliveryReport {
        let erasures = batch.compactMap(\.erasure)
        guard !erasures.isEmpty else { return await sink.deliver(batch) }
        let records = batch.filter { $0.erasure == nil }
        var report = records.isEmpty ? DeliveryReport() : await sink.deliver(records)
        if let halt = report.halt {
            // The sink stopped the batch: the erasures were not tried, so they cost no attempt (a configuration halt
            // hands them back untouched, as it does records without an outcome).
            guard halt.kind != .configuration else { return report }
            for erasure in erasures {
                report.outcomes[erasure.id] = .retry(reason: "not sent: \(halt.reason)", cause: .destination)
            }
            return report
        }
        let waitsFor = erasures.flatMap(\.waitsFor)
        if waitsFor.contains(where: inFlight.isInFlight) {
            logger.info(
                "holding an erasure until the requests of the user's forgotten records are answered",
                metadata: ["erasures": "\(erasures.count)"])
        }
        guard await inFlight.waitUntilEnded(waitsFor) else { return report }
        let erased = await sink.erase(erasures)
        report.outcomes.merge(erased.outcomes) { first, _ in first }
        report.halt = erased.halt
        return report
    }
}

extension LeasedDelivery.Finished {
    /// Erasures of this batch the sink reported done (for the pass's `erased` count).
    func erased(_ settlement: Settlement) -> Int {
        let delivered = Set(settlement.delivered)
        return delivery.records.reduce(0) { $0 + ($1.erasure != nil && delivered.contains($1.id) ? 1 : 0) }
    }
}
