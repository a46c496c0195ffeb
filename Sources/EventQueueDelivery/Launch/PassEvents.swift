import EventQueue

/// What the launch coordinator is doing, as the daemon's `GET /status` reports it.
public enum DaemonState: String, Sendable {
    case idle, draining, stopping
}

/// What a follower of a pass (`POST /launch?wait=true`, `queuectl drain --wait`) receives.
public enum PassEvent: Sendable {
    /// After every batch: the counts so far.
    case progress(DrainSummary)
    /// The pass ended.
    case summary(DrainSummary)
    /// The pass failed on a queue error, or the daemon stopped before it could run; `status` is what a follower
    /// exits with (`queuectl drain --wait`): 75 when the queue was busy, as for `drain --local`.
    case failed(String, status: ExitStatus)
}

/// One finished pass, for `GET /status`.
public struct PassRecord: Sendable {
    public var startedAtMilliseconds: Int64
    public var endedAtMilliseconds: Int64
    /// `nil` when the pass failed on a queue error (see `error`).
    public var summary: DrainSummary?
    public var error: String?

    public init(
        startedAtMilliseconds: Int64, endedAtMilliseconds: Int64, summary: DrainSummary?, error: String? = nil
    ) {
        self.startedAtMilliseconds = startedAtMilliseconds
        self.endedAtMilliseconds = endedAtMilliseconds
        self.summary = summary
        self.error = error
    }
}

/// The coordinator's state, copied out in one piece for a status request (or a test).
public struct DaemonSnapshot: Sendable {
    public var state: DaemonState
    /// Passes started since the coordinator was created.
    public var passes: Int
    public var lastPass: PassRecord?
    /// When the follow-up pass is scheduled (wall-clock milliseconds): the first retry's due time, or a held
    /// drain lock's expiry.
    public var nextRetryAtMilliseconds: Int64?
    public var lastError: String?
    /// Records handed to the sink and not settled yet (0 between passes).
    public var inFlight = 0
    /// A launch arrived that no pass has started for yet: one more pass will run.
    public var launchPending = false
}

/// What the coordinator tells its host about passes: the daemon turns these into metrics and systemd status
/// lines; tests await them. Called on the coordinator's actor: keep them short and non-blocking.
public protocol LaunchObserver: Sendable {
    /// A pass starts (`passes` counts it).
    func passStarted(_ passes: Int)
    /// Records handed to the sink and not settled yet, after every batch (0 when the pass ends).
    func recordsInFlight(_ count: Int)
    /// A pass ended with `summary` after `duration` (monotonic, on the coordinator's clock).
    func passFinished(_ summary: DrainSummary, duration: Duration)
    /// A pass failed on a queue error after `duration`.
    func passFailed(_ error: QueueError, duration: Duration)
}

extension LaunchObserver {
    public func passStarted(_ passes: Int) {}
    public func recordsInFlight(_ count: Int) {}
    public func passFinished(_ summary: DrainSummary, duration: Duration) {}
    public func passFailed(_ error: QueueError, duration: Duration) {}
}
