import Dispatch
import EventQueue

/// A `QueueConsumer` isolated to its own executor, safe to use from any task.
///
/// One entry point, `withConsumer { consumer in ... }`: the closure runs on the dedicated executor with the
/// consumer to itself. It opens no transaction: each consumer call is its own.
public actor QueueStore {
    private nonisolated let executor: DedicatedSerialExecutor
    private let consumer: QueueConsumer

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Whether the caller runs on the store's own queue (true inside `withConsumer`).
    nonisolated var runsOnItsQueue: Bool { executor.isCurrent }
    public nonisolated let path: String

    public init(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) {
        executor = DedicatedSerialExecutor(label: "eventqueue.sqlite")
        consumer = try QueueConsumer(path: path, options: options)
        self.path = path
    }

    /// Runs `body` with the consumer on the store's serial executor. Keep it short and synchronous: every other
    /// SQLite call of the process waits for it.
    public func withConsumer<Value: Sendable>(
        _ body: (QueueConsumer) throws(QueueError) -> Value
    ) throws(QueueError) -> Value {
        try body(consumer)
    }

    /// The queue's statistics; `now` (default: the current time) is the moment "next retry" is counted from.
    /// `includingKeys` also counts the remembered idempotency keys, `includingErasures` the erasures (status and
    /// metrics; not every pass).
    public func stats(
        now: Int64? = nil, includingKeys: Bool = false, includingErasures: Bool = false
    ) throws(QueueError) -> QueueStats {
        try consumer.admin.stats(
            now: now ?? WallClock.nowMilliseconds(), includingKeys: includingKeys,
            includingErasures: includingErasures)
    }

    public func close() {
        consumer.close()
    }
}

/// Runs jobs on one dedicated serial dispatch queue.
///
/// SQLite calls block (a FULL commit is an fsync). On a 2-core machine the cooperative pool has two threads,
/// and a blocking call there stalls every other task in the process, so all SQLite work runs here instead.
public final class DedicatedSerialExecutor: SerialExecutor {
    private let queue: DispatchQueue
    private static let identity = DispatchSpecificKey<ObjectIdentifier>()

    public init(label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.identity, value: ObjectIdentifier(self))
    }

    /// Whether the caller runs on this executor's queue: what `QueueStore` promises for every SQLite call, and
    /// what a test checks, since which thread runs a job is otherwise not observable.
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.identity) == ObjectIdentifier(self) }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
