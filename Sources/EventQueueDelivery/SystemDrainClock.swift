import EventQueue

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
