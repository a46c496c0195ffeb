import EventQueue
import EventQueueDelivery
import Logging
import ServiceLifecycle
import Synchronization

/// Runs the launch coordinator under the service group. The coordinator owns the shutdown sequence
/// (`LaunchCoordinator.run(until:shutdownTimeout:)`): a graceful shutdown stops claiming at once, waits up to
/// `shutdownTimeout` for the batches in flight, then cancels them (the drainer releases what it still holds).
struct DrainService: Service {
    let coordinator: LaunchCoordinator
    let shutdownTimeout: Duration
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        _ = await coordinator.run(
            until: {
                try? await gracefulShutdown()
                notifier.stopping()
                logger.info("stopping: no new batches will be claimed")
            }, shutdownTimeout: shutdownTimeout)
    }
}

/// Runs `action` every `interval`: a launch (`--drain-interval`), a ping of systemd's watchdog, a look at the
/// wall clock (`ClockJumpWatch`) or a checkpoint of the queue clock.
struct TimerService: Service {
    let interval: Duration
    let action: @Sendable () async -> Void

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let interval = self.interval
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            await action()
        }
    }
}

/// Turns the launch coordinator's pass events into the daemon's metrics and systemd status lines.
struct DaemonPassObserver: LaunchObserver {
    let metrics: DaemonMetrics
    let notifier: SystemdNotifier
    /// An unavailable sink is what `systemctl status` should say first.
    let availability: SinkAvailabilityMonitor

    func recordsInFlight(_ count: Int) {
        metrics.recordInFlight(count)
    }

    func passFinished(_ summary: DrainSummary, duration: Duration) {
        metrics.recordPass(summary, duration: duration)
        let snapshot = availability.snapshot
        metrics.recordSinkAvailability(snapshot)
        var line =
            "pending \(summary.remaining?.pending ?? 0); last pass \(summary.result.rawValue) "
            + "(delivered \(summary.delivered), dead \(summary.dead))"
        if snapshot.state == .unavailable {
            line += "; sink unavailable since \(ISO8601.format(unixMilliseconds: snapshot.sinceMilliseconds))"
            if let error = snapshot.lastError { line += " (\(ExternalText.escaped(String(error.prefix(120)))))" }
            if let next = snapshot.nextProbeAtMilliseconds {
                line += ", next probe \(ISO8601.format(unixMilliseconds: next))"
            }
        }
        notifier.status(line)
    }

    func passFailed(_ error: QueueError, duration: Duration) {
        metrics.recordFailedPass(duration: duration)
        notifier.status("last pass failed: \(error.description)")
    }
}

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
        let step = (wall - lastWall) - elapsed.wholeMilliseconds
        if abs(step) >= threshold {
            logger.warning(
                "the wall clock was stepped; launching a pass",
                metadata: ["step_ms": "\(step)", "direction": "\(step < 0 ? "back" : "forward")"])
            coordinator.launch()
        }
    }
}
