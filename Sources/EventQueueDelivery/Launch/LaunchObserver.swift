import EventQueue

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
