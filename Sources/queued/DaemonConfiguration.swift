import EventQueue
import EventQueueDelivery
import Logging
import EventQueueBraze

/// Everything the command line and environment decided, validated once before anything is opened.
struct DaemonConfiguration: Sendable {
    var databasePath: String
    var queueOptions: QueueOptions
    var sinkSpec: String
    var apiKeyFile: String?
    var brazeMaxObjects: Int?
    /// How long an identity call holds its users after Braze answered it (`BrazeSink.settleDelay`).
    var settleDelay: Duration = BrazeSink.defaultSettleDelay
    var maxRequestsPerSecond: Int?
    var socketPath: String
    var drainOptions: DrainOptions
    var drainOnStart: Bool
    var drainInterval: Duration?
    var shutdownTimeout: Duration
    var logLevel: Logger.Level
    /// Recorded in the queue file at start, for every writer (`QueueAdmin.recordLimits`).
    var limits: QueueLimits
}
