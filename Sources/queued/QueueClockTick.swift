import EventQueue
import EventQueueDelivery
import Logging

/// Takes a checkpoint of the queue clock every `interval` (a `TimerService`; issue 39 #2, `QueueAdmin.tickQueueClock`):
/// the max age counts a record's age from the first checkpoint that saw it, so the interval is how late expiry may
/// be while records are enqueued and no pass runs (each pass's start takes one too). A minute: late by at most a minute on a
/// limit of days, and one small write a minute only while writers write (an idle queue writes nothing).
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
