import EventQueue
import EventQueueDelivery
import Logging
import Synchronization

/// Notices the wall clock being stepped (NTP, an administrator, a resumed VM) by comparing it with the monotonic
/// clock at every `check()` (once a second, `TimerService`), logs the step, and launches a pass.
///
/// Why a pass: after a step back, due times and leases written under the old clock lie further ahead than any
/// legitimate wait and are treated as passed by the claim (`ClockHorizon`), so the records they parked can go out
/// now rather than when the retry timer, armed under the old clock, fires. After a step forward, backoffs have
/// come due early; a pass delivers them (early, never twice). Timers themselves run on the monotonic clock.
final class ClockJumpWatch: Sendable {
    let coordinator: LaunchCoordinator
    let logger: Logger
    /// Differences below this are scheduling noise on a loaded machine, not a step.
    let threshold: Int64 = 2_000
    private let last = Mutex((wall: WallClock.nowMilliseconds(), monotonic: ContinuousClock.now))

    init(coordinator: LaunchCoordinator, logger: Logger) {
        self.coordinator = coordinator
        self.logger = logger
    }

    func check() {
        let (wall, monotonic) = (WallClock.nowMilliseconds(), ContinuousClock.now)
        let (lastWall, elapsed) = last.withLock { last in
            defer { last = (wall, monotonic) }
            return (last.wall, monotonic - last.monotonic)
        }
        let elapsedMilliseconds =
            elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        let step = (wall - lastWall) - elapsedMilliseconds
        if abs(step) >= threshold {
            logger.warning(
                "the wall clock was stepped; launching a pass",
                metadata: ["step_ms": "\(step)", "direction": "\(step < 0 ? "back" : "forward")"])
            coordinator.launch()
        }
    }
}
