import Synchronization

/// Where deliveries put what came back, so the drain loop can take every result that is in at once (a task
/// group hands them out one by one, and has no way to ask "what else is done?"): the batches that came back
/// while the loop was busy committing are then settled, acked and replaced in one transaction.
final class FinishedDeliveries: Sendable {
    private let results = Mutex<[LeasedDelivery.Finished]>([])

    func put(_ finished: LeasedDelivery.Finished) {
        results.withLock { $0.append(finished) }
    }

    func put(contentsOf finished: some Collection<LeasedDelivery.Finished>) {
        results.withLock { $0.append(contentsOf: finished) }
    }

    /// Every result put since the last call, in the order they came back.
    func takeAll() -> [LeasedDelivery.Finished] {
        results.withLock { results in
            defer { results.removeAll(keepingCapacity: true) }
            return results
        }
    }
}
