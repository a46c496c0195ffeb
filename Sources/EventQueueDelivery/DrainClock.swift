import EventQueue

/// The time the drain loop, the backoff and the launch coordinator read and wait on, injected so that tests
/// advance it instead of sleeping.
///
/// Two readings (docs/ARCHITECTURE.md, "Clocks"): the wall clock, compared with the times stored in the shared
/// file, and the monotonic clock, on which waits inside one process run, so a wall-clock step cannot stretch or
/// cut them. Swift's `Clock` has only one "now".
public protocol DrainClock: Sendable {
    /// Now, as UTC Unix milliseconds: what the queue file stores and compares.
    func wallMilliseconds() -> Int64

    /// Monotonic time elapsed since an origin of the clock's choosing: differences measure durations.
    func monotonic() -> Duration

    /// The host's monotonic clock that counts suspend, with its boot: what the queue clock advances by
    /// (`QueueAdmin.tickQueueClock`), so a record's age never depends on the wall clock.
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

extension Duration {
    /// The duration in whole milliseconds (truncated).
    package var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }
}

/// Now, on both clocks: how time comes into `SinkAvailability` and `BrazeRatePolicy`, so their transitions are
/// tested on numbers.
public struct Moment: Sendable, Hashable {
    public var monotonic: Duration
    public var wallMilliseconds: Int64

    public init(monotonic: Duration, wallMilliseconds: Int64) {
        self.monotonic = monotonic
        self.wallMilliseconds = wallMilliseconds
    }
}

/// The real clocks: `CLOCK_REALTIME` for the file, `ContinuousClock` (monotonic) for waits, `CLOCK_BOOTTIME` for
/// the queue clock.
public struct SystemDrainClock: DrainClock {
    private let origin = ContinuousClock.now

    public init() {}

    public func wallMilliseconds() -> Int64 { WallClock.nowMilliseconds() }

    public func monotonic() -> Duration { origin.duration(to: ContinuousClock.now) }

    public func bootClock() -> BootClockReading { .system() }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration, clock: .continuous)
    }
}
