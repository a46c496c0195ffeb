import Dispatch

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
