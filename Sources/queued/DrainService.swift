import Logging
import ServiceLifecycle
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

/// Turns SIGUSR1 into a launch.
struct LaunchSignalService: Service {
    let coordinator: LaunchCoordinator
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sigusr1)
        for await _ in signals.cancelOnGracefulShutdown() {
            logger.debug("launch by SIGUSR1")
            coordinator.launch()
        }
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
