import EventQueue
import EventQueueDelivery
import Logging
import ServiceLifecycle

/// Notices the wall clock being stepped (NTP, an administrator, a resumed VM) by comparing it with the monotonic
/// clock once a second, logs the step, and launches a pass.
///
/// Why a pass: after a step back, due times and leases written under the old clock lie further ahead than any
/// legitimate wait and are treated as passed by the claim (`ClockHorizon`), so the records they parked can go out
/// now rather than when the retry timer, armed under the old clock, fires. After a step forward, backoffs have
/// come due early; a pass delivers them (early, never twice). Timers themselves run on the monotonic clock.
struct ClockJumpWatch: Service {
    let coordinator: LaunchCoordinator
    let logger: Logger
    var interval: Duration = .seconds(1)
    /// Differences below this are scheduling noise on a loaded machine, not a step.
    var threshold: Int64 = 2_000

    func run() async throws {
        let clock = ContinuousClock()
        var lastWall = WallClock.nowMilliseconds()
        var lastMonotonic = clock.now
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            let wall = WallClock.nowMilliseconds()
            let monotonic = clock.now
            let elapsed = monotonic - lastMonotonic
            let elapsedMilliseconds =
                elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
            let step = (wall - lastWall) - elapsedMilliseconds
            lastWall = wall
            lastMonotonic = monotonic
            if abs(step) >= threshold {
                logger.warning(
                    "the wall clock was stepped; launching a pass",
                    metadata: ["step_ms": "\(step)", "direction": "\(step < 0 ? "back" : "forward")"])
                coordinator.launch()
            }
        }
    }
}
