/// How a queue file is opened. The defaults are the safe ones; each knob trades safety for speed knowingly.
public struct QueueOptions: Sendable, Hashable {
    /// What a returned enqueue (or ack) promises about power loss.
    public enum Durability: String, Sendable, Hashable, CaseIterable {
        /// `synchronous=FULL`: a commit that returned is on disk even if power fails a moment later.
        case full
        /// `synchronous=NORMAL`: much faster; a power loss (not a process crash) may lose the last commits.
        case normal
    }

    /// How long to wait for another process's write lock before giving up with `QueueError.busy`.
    public var busyTimeoutMilliseconds: Int
    public var durability: Durability
    /// After a checkpoint the `-wal` file is truncated to at most this size.
    public var journalSizeLimitBytes: Int
    /// Writers refuse new records while the queue's filesystem has less free space than this, so that acks,
    /// checkpoints and vacuum (which need space too) can always drain a full queue. 0 turns the check off.
    public var minimumFreeBytes: Int64

    public init(
        busyTimeoutMilliseconds: Int = 5_000,
        durability: Durability = .full,
        journalSizeLimitBytes: Int = 32 * 1024 * 1024,
        minimumFreeBytes: Int64 = 16 * 1024 * 1024
    ) {
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.durability = durability
        self.journalSizeLimitBytes = journalSizeLimitBytes
        self.minimumFreeBytes = minimumFreeBytes
    }
}
