import EventQueueDelivery
import Logging
import ServiceLifecycle

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
