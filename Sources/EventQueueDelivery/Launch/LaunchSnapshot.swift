/// What the launch coordinator is doing, as the daemon's `GET /status` reports it.
public enum LaunchState: String, Sendable {
    case idle, draining, stopping
}

/// The coordinator's state, copied out in one piece for a status request (or a test).
public struct LaunchSnapshot: Sendable {
    public var state: LaunchState
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
    /// Whether the sink is available, and when it is not, since when, why and the next probe.
    public var sink: SinkAvailability.Snapshot?
}
