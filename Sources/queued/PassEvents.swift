import EventQueueDelivery

/// What the daemon is doing, as `GET /status` reports it.
enum DaemonState: String, Sendable {
    case idle, draining, stopping
}

/// What a follower of a pass (`POST /launch?wait=true`) receives.
enum PassEvent: Sendable {
    /// After every batch: the counts so far.
    case progress(DrainSummary)
    /// The pass ended.
    case summary(DrainSummary)
    /// The pass failed on a queue error, or the daemon stopped before it could run.
    case failed(String)
}

/// One finished pass, for `GET /status`.
struct PassRecord: Sendable {
    var startedAtMilliseconds: Int64
    var endedAtMilliseconds: Int64
    /// `nil` when the pass failed on a queue error (see `error`).
    var summary: DrainSummary?
    var error: String?
}

/// The coordinator's state, copied out for a status request.
struct DaemonSnapshot: Sendable {
    var state: DaemonState
    var passes: Int
    var lastPass: PassRecord?
    var nextRetryAtMilliseconds: Int64?
    var lastError: String?
    /// Records handed to the sink and not settled yet (0 between passes).
    var inFlight = 0
}
