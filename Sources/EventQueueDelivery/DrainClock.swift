import EventQueue

/// The time the drain loop, the backoff and the launch coordinator read and wait on, injected so that tests
/// advance it instead of sleeping.
///
/// Two readings, because the queue needs both (docs/ARCHITECTURE.md, "Clocks"): the wall clock, compared with
/// the times stored in the shared file (due times, lease and drain-lock expiries), and the monotonic clock, on
/// which waits inside one process run (lease renewal, retry timers, the shutdown timeout), so that a step of the
/// wall clock cannot stretch or cut them short.
///
/// Why not Swift's `Clock` protocol on its own: it has one notion of "now" (an associated `Instant`), and the
/// drain loop needs a second one, the wall clock, whose milliseconds every process sharing the file compares.
/// The monotonic side is `Duration`-based, so an `any DrainClock` is used without generics.
public protocol DrainClock: Sendable {
    /// Now, as UTC Unix milliseconds: what the queue file stores and compares.
    func wallMilliseconds() -> Int64

    /// Monotonic time elapsed since an origin of the clock's choosing: differences measure durations.
    func monotonic() -> Duration

    /// The host's monotonic clock that counts suspend, with its boot: what the queue clock advances by, so that
    /// a record's age for the max age is measured in the file across processes and restarts, never by the wall
    /// clock (issue 39 #2, `QueueAdmin.tickQueueClock`).
    func bootClock() -> BootClockReading

    /// Waits `duration` on the monotonic side; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

extension DrainClock {
    /// The monotonic time elapsed since `earlier`, a reading of `monotonic()`.
    public func elapsed(since earlier: Duration) -> Duration { monotonic() - earlier }

    /// Now, on both clocks.
    public func moment() -> Moment { Moment(monotonic: monotonic(), wallMilliseconds: wallMilliseconds()) }
}

/// Now, on both clocks: the monotonic side orders and spaces probes and requests; the wall side (UTC) is what status
/// shows and what `X-RateLimit-Reset` is compared with. Time comes into `SinkAvailability` and `BrazeRatePolicy` as
/// this value, so that every transition is tested on numbers.
public struct Moment: Sendable, Hashable {
    public var monotonic: Duration
    public var wallMilliseconds: Int64

    public init(monotonic: Duration, wallMilliseconds: Int64) {
        self.monotonic = monotonic
        self.wallMilliseconds = wallMilliseconds
    }
}
