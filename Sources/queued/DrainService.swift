import EventQueueDelivery
import Logging
import ServiceLifecycle
import EventQueue

/// Runs the launch coordinator under the service group. The coordinator owns the shutdown sequence
/// (`LaunchCoordinator.run(until:shutdownTimeout:)`): a graceful shutdown stops claiming at once, waits up to
/// `shutdownTimeout` for the batches in flight, then cancels them (the drainer releases what it still holds).
struct DrainService: Service {
    let coordinator: LaunchCoordinator
    let shutdownTimeout: Duration
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        let (notifier, logger) = (self.notifier, self.logger)
        _ = await coordinator.run(
            until: {
                try? await gracefulShutdown()
                notifier.stopping()
                logger.info("stopping: no new batches will be claimed")
            }, shutdownTimeout: shutdownTimeout)
    }
}

/// Runs `action` every `interval`: a launch (`--drain-interval`), a ping of systemd's watchdog, a look at the
/// wall clock (`ClockJumpWatch`) or a checkpoint of the queue clock (`QueueClockTick`).
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
    /// The drainer's sink availability: an unavailable sink is what `systemctl status` should say first.
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
