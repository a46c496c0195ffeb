import Dispatch
import EventQueue

/// Runs jobs on one dedicated serial dispatch queue.
///
/// SQLite calls block (a FULL commit is an fsync). On a 2-core machine the cooperative pool has two threads,
/// and a blocking call there stalls every other task in the process, so all SQLite work runs here instead.
public final class DedicatedSerialExecutor: SerialExecutor {
    private let queue: DispatchQueue

    public init(label: String) {
        queue = DispatchQueue(label: label)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// A `QueueConsumer` isolated to its own executor, safe to use from any task.
public actor QueueStore {
    private nonisolated let executor: DedicatedSerialExecutor
    private let consumer: QueueConsumer

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let path: String

    public init(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) {
        executor = DedicatedSerialExecutor(label: "eventqueue.sqlite")
        consumer = try QueueConsumer(path: path, options: options)
        self.path = path
    }

    public func claim(limit: Int, leaseMilliseconds: Int64) throws(QueueError) -> Claim {
        try consumer.claim(limit: limit, leaseMilliseconds: leaseMilliseconds)
    }

    public func ack(_ ids: [Int64], lease: Lease) throws(QueueError) -> Int {
        try consumer.ack(ids, lease: lease)
    }

    /// Acks a delivered batch and claims the next in one transaction: see `QueueConsumer.ackAndClaim`.
    public func ackAndClaim(
        _ ids: [Int64], lease: Lease, limit: Int, leaseMilliseconds: Int64
    ) throws(QueueError) -> (acked: Int, next: Claim) {
        try consumer.ackAndClaim(ids, lease: lease, limit: limit, leaseMilliseconds: leaseMilliseconds)
    }

    public func nack(
        _ ids: [Int64], lease: Lease, reason: String, retryAt: Int64, countsAsAttempt: Bool, maxAttempts: Int
    ) throws(QueueError) -> NackResult {
        try consumer.nack(
            ids, lease: lease, reason: reason, retryAt: retryAt, countsAsAttempt: countsAsAttempt,
            maxAttempts: maxAttempts)
    }

    public func reject(_ ids: [Int64], lease: Lease, reason: String) throws(QueueError) -> Int {
        try consumer.reject(ids, lease: lease, reason: reason)
    }

    public func renew(_ lease: Lease, ids: [Int64], leaseMilliseconds: Int64) throws(QueueError) -> (Lease, Int) {
        var renewed = lease
        let held = try consumer.renew(&renewed, ids: ids, leaseMilliseconds: leaseMilliseconds)
        return (renewed, held)
    }

    public func release(_ ids: [Int64], lease: Lease) throws(QueueError) -> Int {
        try consumer.release(ids, lease: lease)
    }

    public func acquireDrainLock(leaseMilliseconds: Int64) throws(QueueError) -> DrainLockHolder? {
        try consumer.acquireDrainLock(leaseMilliseconds: leaseMilliseconds)
    }

    public func releaseDrainLock() throws(QueueError) {
        try consumer.releaseDrainLock()
    }

    /// `now` (default: the current time) is the moment "next retry" is counted from; see `Drainer`.
    public func stats(now: Int64? = nil) throws(QueueError) -> QueueStats {
        try consumer.stats(now: now ?? WallClock.nowMilliseconds())
    }

    /// The highest record id ever assigned: the `eventqueue_records_enqueued_total` metric.
    public func highestAssignedID() throws(QueueError) -> Int64 {
        try consumer.highestAssignedID()
    }

    @discardableResult
    public func truncateWALIfLarger(than thresholdBytes: Int64) throws(QueueError) -> Bool {
        try consumer.truncateWALIfLarger(than: thresholdBytes)
    }

    public func checkpointAndVacuum() throws(QueueError) -> MaintenanceResult {
        try consumer.checkpointAndVacuum()
    }

    public func close() {
        consumer.close()
    }
}
