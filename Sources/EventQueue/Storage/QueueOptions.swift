/// How a queue file is opened. The defaults are the safe ones; each knob trades safety for speed knowingly.
public struct QueueOptions: Sendable, Hashable {
    /// What a returned enqueue (or ack) promises about power loss.
    public enum Durability: String, Sendable, Hashable, CaseIterable {
        /// What `synchronous=FULL` promises: a write that returned is on disk even if power fails a moment later.
        /// (The commit runs with `NORMAL` and the WAL is synced after it, once the lock is free for the next
        /// writer; `Connection+Write.swift`.)
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
    /// Runs `PRAGMA quick_check` when an existing file is opened, before anything could write to it, and refuses
    /// a damaged file with `QueueError.corrupt`. A corrupt page that a write does not touch is otherwise only
    /// found later (by a claim, or never). The check reads every page, so it is off by default: writers (the
    /// library's hot path and `queuectl enqueue`, called once per record) never pay for it. `queued` turns it on
    /// for its start (`Daemon`), so a damaged file is refused there, untouched, instead of found mid-pass.
    public var verifyIntegrityOnOpen: Bool
    /// Whether a writer waits in the writers' line (the `<queue>-turn` file) before each write, so that the
    /// write lock goes to writers in the order they asked: with several writer processes that keeps an enqueue's
    /// p99.9 within milliseconds instead of tens of them (docs/PERFORMANCE.md section 5). Off: the writer polls
    /// for SQLite's lock as writers of other languages do, and can be passed over for a long time.
    public var waitsInLine: Bool

    /// The safe defaults: a 5 s busy timeout, full durability, a 32 MiB `-wal` limit, a 16 MiB free-space
    /// reserve, no integrity check at open, writers in line.
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
