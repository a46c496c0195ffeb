import Dispatch
import EventQueue

/// A `QueueConsumer` isolated to its own executor, safe to use from any task.
///
/// One entry point, `withConsumer { consumer in ... }`: the closure runs on the dedicated executor, with the
/// consumer to itself, so several calls that belong together (renew the lease, then the drain lock) run back to
/// back and nothing is forwarded method by method. Unlike GRDB's `write { db in }` it opens no transaction: each
/// consumer call is its own (through `Connection.transaction`), and a closure that needs several statements in
/// one transaction calls the consumer method that does them together (`ackAndClaim`).
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
