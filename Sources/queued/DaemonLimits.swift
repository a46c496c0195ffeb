import EventQueue
import EventQueueDelivery
import Logging

/// The daemon's start with the limits (issue 30): it records the ones it was given in the queue file, so that every
/// writer of this release enforces them from its next enqueue on, then enforces them once itself (what older and
/// foreign writers stored past the limit while no daemon ran, records that aged past the max age meanwhile), and
/// starts watching what the queue gives up, so each pass logs what grew since the one before.
enum DaemonLimits {
    static func start(store: QueueStore, limits: QueueLimits, logger: Logger) async throws(QueueError) {
        let (enforcement, drops) = try await store.withConsumer { consumer throws(QueueError) in
            let admin = consumer.admin
            try admin.recordLimits(limits)
            var enforcement = try admin.enforceLimits()
            enforcement.queueBytes = try admin.queueBytes()
            try admin.watchDrops()
            return (enforcement, try admin.drops())
        }
        logger.info(
            "limits recorded in the queue file",
            metadata: [
                "max_queue_bytes": "\(limits.maxQueueBytes)", "when_full": "\(limits.whenFull.rawValue)",
                "max_age_seconds": "\(limits.maxAgeSeconds)", "queue_bytes": "\(enforcement.queueBytes)",
                "dropped_oldest": "\(drops.oldest)", "refused": "\(drops.refused)", "expired": "\(drops.expired)",
            ])
        if enforcement.expired > 0 {
            logger.warning(
                "expired records pending longer than the max age: they are dead letters (queuectl dead list)",
                metadata: ["count": "\(enforcement.expired)", "max_age_seconds": "\(limits.maxAgeSeconds)"])
        }
        if enforcement.dropped > 0 {
            logger.warning(
                "dropped the oldest records to keep the queue within its size limit (--when-full drop-oldest)",
                metadata: ["count": "\(enforcement.dropped)", "max_queue_bytes": "\(limits.maxQueueBytes)"])
        }
    }
}
