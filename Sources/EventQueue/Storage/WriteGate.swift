import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// How one connection waits to write (its place in the writers' line, and its busy handler for SQLite's lock) and
/// whether a commit is synced before the write returns. One type, because the line decides how eagerly to poll for
/// the lock, and the timeout counts from the moment the write began waiting in line.
///
/// Why not `sqlite3_busy_timeout`: its sleeps grow to 100 ms, so a sleeping writer loses to writers in a loop and
/// can time out, while polling every millisecond from the start hands the lock from process to process at every
/// commit. So: the default's first steps, then jittered polls every 0.3–0.9 ms (docs/PERFORMANCE.md, section 5).
final class WriteGate {
    /// How long one write may wait in all (in line and for the lock), in milliseconds.
    var timeoutMilliseconds: Int
    /// Whether a write that returned must be on disk (`QueueOptions.Durability.full`; synced in `Connection.write`).
    var syncsCommits = true
    /// Whether writes wait in the writers' line: writers do; the consumer never does (its few, long claims and acks
    /// in line would halve a lone writer's rate; the line's holder polls for them instead).
    var waitsInLine = false
    /// WAL syncs done after a commit, for the tests.
    var walSyncs = 0

    private let queuePath: String
    /// The line, opened at the first write that waits in it (nil: unusable, the writes go without it).
    private lazy var line: WriteTurn? = WriteTurn.open(queuePath: queuePath)
    /// The line's turn while this connection holds it.
    private var heldTurn: WriteTurn?
    /// When the current write began waiting (in line, then for the lock): the timeout counts from there.
    private var writeStartedAt: UInt64?
    private var lockWaitStartedAt: UInt64 = 0
    private var generator = SystemRandomNumberGenerator()

    /// After this long, a waiter polls eagerly.
    static let eagerAfterNanoseconds: UInt64 = 20_000_000
    /// The patient phase's steps, as in SQLite's default handler.
    static let patientSteps: [UInt64] = [1_000_000, 2_000_000, 5_000_000, 10_000_000]
    static let eagerStep: UInt64 = 600_000
    /// The step of a connection that holds the writers' turn with writers behind it (alone in line, eager polling
    /// would only take the lock from the consumer between its claim and its ack).
    static let turnStep: UInt64 = 200_000

    init(queuePath: String, timeoutMilliseconds: Int) {
        self.queuePath = queuePath
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Installs this gate as the busy handler of `handle`. The connection keeps the gate alive as long as `handle`.
    func install(on handle: OpaquePointer) {
        sqlite3_busy_handler(handle, busyCallback, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A write begins: waits for its turn in the line (at most the timeout, and never for a stale holder).
    func enter() {
        let start = WallClock.monotonicNanoseconds()
        writeStartedAt = start
        guard waitsInLine, let line else { return }
        let (budget, overflow) = Int64(max(0, timeoutMilliseconds)).multipliedReportingOverflow(by: 1_000_000)
        if line.take(timeoutNanoseconds: overflow ? Int64.max : budget) { heldTurn = line }
    }

    /// The write's transaction is over (committed or rolled back): the turn goes to the next in line.
    func leave() {
        writeStartedAt = nil
        heldTurn?.give()
        heldTurn = nil
    }

    /// Called by SQLite with the number of earlier calls for the same lock attempt. Returns false to give up.
    func shouldRetry(attempt: Int32) -> Bool {
        let now = WallClock.monotonicNanoseconds()
        if attempt <= 0 { lockWaitStartedAt = writeStartedAt ?? now }
        let elapsed = now &- lockWaitStartedAt
        // Saturating: a timeout from a command line or the environment must never trap.
        let (product, overflow) = UInt64(max(0, timeoutMilliseconds)).multipliedReportingOverflow(by: 1_000_000)
        let timeout = overflow ? UInt64.max : product
        guard elapsed < timeout else { return false }
        let base =
            heldTurn?.othersWaiting == true
            ? Self.turnStep
            : elapsed >= Self.eagerAfterNanoseconds
                ? Self.eagerStep : Self.patientSteps[min(Int(attempt), Self.patientSteps.count - 1)]
        let step = UInt64.random(in: base / 2...base * 3 / 2, using: &generator)
        var pause = timespec(tv_sec: 0, tv_nsec: Int(min(step, timeout - elapsed)))
        nanosleep(&pause, nil)
        return true
    }
}

private let busyCallback: @convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32 = { context, attempt in
    guard let context else { return 0 }
    return Unmanaged<WriteGate>.fromOpaque(context).takeUnretainedValue().shouldRetry(attempt: attempt) ? 1 : 0
}
