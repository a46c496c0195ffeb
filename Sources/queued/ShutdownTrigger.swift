import ServiceLifecycle
import Synchronization

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
