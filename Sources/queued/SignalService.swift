import EventQueueDelivery
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

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
