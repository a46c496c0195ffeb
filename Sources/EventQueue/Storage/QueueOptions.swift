/// How a queue file is opened. The defaults are the safe ones; each knob trades safety for speed knowingly.
public struct QueueOptions: Sendable, Hashable {
    /// What a returned enqueue (or ack) promises about power loss.
    public enum Durability: String, Sendable, Hashable, CaseIterable {
        /// What `synchronous=FULL` promises: a write that returned is on disk even if power fails a moment later.
        case full
        /// `synchronous=NORMAL`: much faster; a power loss (not a process crash) may lose the last commits.
        case normal
    }

    /// How long to wait for another process's write lock before giving up with `QueueError.busy`.
    public var busyTimeoutMilliseconds: Int
    /// What a commit promises about power loss (`full` by default).
    public var durability: Durability
    /// After a checkpoint the `-wal` file is truncated to at most this size.
    public var journalSizeLimitBytes: Int
    /// Writers refuse new records while the queue's filesystem has less free space than this, so that acks,
    /// checkpoints and vacuum (which need space too) can always drain a full queue. 0 turns the check off.
    public var minimumFreeBytes: Int64
    /// Runs `PRAGMA quick_check` when an existing file is opened, before anything could write to it, and refuses a
    /// damaged file with `QueueError.corrupt`. It reads every page, so it is off by default (writers never pay
    /// for it); `queued` turns it on at start, so a damaged file is refused untouched instead of found mid-pass.
    public var verifyIntegrityOnOpen: Bool
    /// Whether a writer waits in the writers' line (`<queue>-turn`, `WriteTurn`) before each write, so the write
    /// lock goes to writers in the order they asked. Off: it polls for SQLite's lock, and can be passed over.
    public var waitsInLine: Bool

    /// The safe defaults: 5 s busy timeout, full durability, 32 MiB `-wal`, 16 MiB reserve, writers in line.
    public init(
        busyTimeoutMilliseconds: Int = 5_000,
        durability: Durability = .full,
        journalSizeLimitBytes: Int = 32 * 1024 * 1024,
        minimumFreeBytes: Int64 = 16 * 1024 * 1024,
        verifyIntegrityOnOpen: Bool = false,
        waitsInLine: Bool = true
    ) {
        self.waitsInLine = waitsInLine
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.durability = durability
        self.journalSizeLimitBytes = journalSizeLimitBytes
        self.minimumFreeBytes = minimumFreeBytes
        self.verifyIntegrityOnOpen = verifyIntegrityOnOpen
    }
}
