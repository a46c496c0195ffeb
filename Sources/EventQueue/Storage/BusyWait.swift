import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// How a connection waits for another process's lock: patiently at first, then eagerly, until the timeout.
///
/// Why not `sqlite3_busy_timeout`: SQLite's locks are not queued (whoever asks first after a commit gets the
/// lock), and its default handler sleeps in steps that grow to 100 ms. A writer asleep for 100 ms loses to
/// writers in a loop nearly every time; with eight of them one could wait out its whole 5 s timeout and fail
/// with SQLITE_BUSY. Polling every millisecond from the start fixes that but hands the lock from process to
/// process at every commit, which costs half the throughput. So: the default's first steps (about 1, 2, 5 and
/// 10 ms), which leave the lock with whoever is using it, and once a wait passes `eagerAfterNanoseconds`,
/// polls every 0.3–0.9 ms, so no waiter is passed over for long. Jittered, so waiters do not wake in step.
/// Measured with `eventqueue-bench contention` (docs/PERFORMANCE.md, "What was profiled and changed").
final class BusyWait {
    /// How long one lock attempt may wait in all.
    var timeoutMilliseconds: Int
    private var startedAt: UInt64 = 0
    /// Set while a write waited in the writers' line first (`Connection.inTurn`): the timeout counts from then.
    private var waitStartedAt: UInt64?
    /// The writers' turn, while the connection holds it: then, with writers waiting behind it, it polls eagerly
    /// from the first wait (`turnStep`), since only the consumer and writers outside the line can hold the lock.
    /// Alone in line it waits as a writer without a line does: polling eagerly then only takes the lock from the
    /// consumer between its claim and its ack, and a lone writer's p99 doubled (docs/PERFORMANCE.md section 5).
    private var heldLine: WriteTurn?
    private var generator = SystemRandomNumberGenerator()

    /// After this long, a waiter polls eagerly.
    static let eagerAfterNanoseconds: UInt64 = 20_000_000
    /// The patient phase's steps, as in SQLite's default handler.
    static let patientSteps: [UInt64] = [1_000_000, 2_000_000, 5_000_000, 10_000_000]
    /// The eager phase's step.
    static let eagerStep: UInt64 = 600_000
    /// The step of a connection that holds the writers' turn.
    static let turnStep: UInt64 = 200_000

    init(timeoutMilliseconds: Int) {
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The next lock attempts belong to a write that began waiting (in the writers' line) at `start`.
    func begin(waitStartedAt start: UInt64, holding line: WriteTurn?) {
        waitStartedAt = start
        heldLine = line
    }

    /// The write of `begin` is over.
    func end() {
        waitStartedAt = nil
        heldLine = nil
    }

    /// Installs `wait` as the busy handler of `handle`. The connection keeps `wait` alive as long as `handle`.
    static func install(_ wait: BusyWait, on handle: OpaquePointer) {
        sqlite3_busy_handler(handle, busyCallback, Unmanaged.passUnretained(wait).toOpaque())
    }

    /// Called by SQLite with the number of earlier calls for the same lock attempt. Returns false to give up.
    func shouldRetry(attempt: Int32) -> Bool {
        let now = Self.monotonicNanoseconds()
        if attempt <= 0 { startedAt = waitStartedAt ?? now }
        let elapsed = now &- startedAt
        // Saturating: a timeout from a command line or the environment must never trap (issue 13, item 9).
        let (product, overflow) = UInt64(max(0, timeoutMilliseconds)).multipliedReportingOverflow(by: 1_000_000)
        let timeout = overflow ? UInt64.max : product
        guard elapsed < timeout else { return false }
        let base =
            heldLine?.othersWaiting == true
            ? Self.turnStep
            : elapsed >= Self.eagerAfterNanoseconds
                ? Self.eagerStep : Self.patientSteps[min(Int(attempt), Self.patientSteps.count - 1)]
        let step = UInt64.random(in: base / 2...base * 3 / 2, using: &generator)
        var pause = timespec(tv_sec: 0, tv_nsec: Int(min(step, timeout - elapsed)))
        nanosleep(&pause, nil)
        return true
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

private let busyCallback: @convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32 = { context, attempt in
    guard let context else { return 0 }
    return Unmanaged<BusyWait>.fromOpaque(context).takeUnretainedValue().shouldRetry(attempt: attempt) ? 1 : 0
}
