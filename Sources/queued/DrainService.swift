import EventQueue
import EventQueueDelivery
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

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

/// Takes a checkpoint of the queue clock every `interval` (`QueueAdmin.tickQueueClock`): the max age counts a
/// record's age from the first checkpoint that saw it, so the interval is how late expiry may be while records are
/// enqueued and no pass runs (each pass's start takes one too). A minute: late by at most a minute on a limit of
/// days, and one small write a minute only while writers write (an idle queue writes nothing).
enum QueueClockTick {
    static let interval: Duration = .seconds(60)

    static func tick(store: QueueStore, logger: Logger) async {
        do {
            try await store.withConsumer { consumer throws(QueueError) in
                _ = try consumer.admin.tickQueueClock()
            }
        } catch {
            // The next tick or pass takes the checkpoint: a record's age is then counted from it.
            logger.warning(
                "could not take a checkpoint of the queue clock", metadata: ["error": "\(error.description)"])
        }
    }
}

/// The daemon's signals: SIGUSR1 launches a pass; SIGHUP reopens the sink's file (after a log rotation, as log
/// daemons do; its default action would end the daemon and leave its socket); SIGTERM and SIGINT start the
/// graceful shutdown.
///
/// The signals are trapped before `READY=1` is sent (a launch signal right after readiness must not kill the
/// process with SIGUSR1's default action), which is why this service, not the service group, owns them.
struct SignalService: Service {
    let signals: UnixSignalsSequence
    let coordinator: LaunchCoordinator
    let sink: any Sink
    let shutdown: ShutdownTrigger
    let logger: Logger

    func run() async throws {
        for await signal in signals.cancelOnGracefulShutdown() {
            if signal == .sigusr1 {
                logger.debug("launch by SIGUSR1")
                coordinator.launch()
            } else if signal == .sighup {
                logger.info(
                    "SIGHUP: reopening the sink's file before the next batch", metadata: ["sink": "\(sink.name)"])
                sink.reopen()
            } else {
                logger.info("stopping on \(signal)")
                // Keep listening: the group shuts services down in reverse order, and a service that returns
                // before its turn counts as finished unexpectedly. The sequence ends when our turn comes.
                await shutdown.trigger()
            }
        }
    }
}

/// Lets a service start the graceful shutdown of the group it belongs to (the group is created after it).
final class ShutdownTrigger: Sendable {
    private let group = Mutex<ServiceGroup?>(nil)

    func attach(_ serviceGroup: ServiceGroup) {
        group.withLock { $0 = serviceGroup }
    }

    func trigger() async {
        guard let serviceGroup = group.withLock({ $0 }) else { return }
        await serviceGroup.triggerGracefulShutdown()
    }
}
