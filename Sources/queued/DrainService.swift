import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Runs the launch coordinator under the service group. A graceful shutdown stops claiming at once, waits up
/// to `shutdownTimeout` for the batch in flight, then cancels it (the drainer releases what it still holds).
struct DrainService: Service {
    let coordinator: LaunchCoordinator
    let shutdownTimeout: Duration
    let notifier: SystemdNotifier
    let logger: Logger

    func run() async throws {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await coordinator.run()
                return true
            }
            group.addTask {
                try? await gracefulShutdown()
                notifier.stopping()
                logger.info("stopping: no new batches will be claimed")
                coordinator.requestStop()
                do {
                    try await Task.sleep(for: shutdownTimeout)
                } catch {
                    return false
                }
                return false
            }
            let passLoopFinished = await group.next() ?? false
            if !passLoopFinished {
                logger.warning(
                    "the batch in flight did not finish within the shutdown timeout; cancelling it and releasing its records"
                )
            }
            group.cancelAll()
        }
    }
}

/// The daemon's signals: SIGUSR1 launches a pass; SIGTERM and SIGINT start the graceful shutdown.
///
/// The signals are trapped before `READY=1` is sent (a launch signal right after readiness must not kill the
/// process with SIGUSR1's default action), which is why this service, not the service group, owns them.
struct SignalService: Service {
    let signals: UnixSignalsSequence
    let coordinator: LaunchCoordinator
    let shutdown: ShutdownTrigger
    let logger: Logger

    func run() async throws {
        for await signal in signals.cancelOnGracefulShutdown() {
            if signal == .sigusr1 {
                logger.debug("launch by SIGUSR1")
                coordinator.launch()
            } else {
                // Keep listening: the group stops services in reverse order, and this one ends when its turn
                // comes (returning early would count as a service failing).
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

/// Launches a pass every `interval` (`--drain-interval`), and pings systemd's watchdog when asked to.
struct TimerService: Service {
    let interval: Duration
    let action: @Sendable () -> Void

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let interval = self.interval
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            action()
        }
    }
}
