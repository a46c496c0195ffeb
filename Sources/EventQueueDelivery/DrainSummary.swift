import EventQueue

/// Counts of one drain pass, reported as it goes and at its end.
public struct DrainSummary: Sendable, Hashable {
    /// Records and erasures the sink took, acked (deleted from the queue).
    public var delivered = 0
    /// Of those, erasures: users deleted at the destination (`forget` with a Braze delete).
    public var erased = 0
    /// Records returned for a later retry (each time one is returned; one record can count twice in a pass
    /// only if its retry came due during the pass).
    public var retried = 0
    /// Records dead-lettered in this pass (rejected, or out of attempts).
    public var dead = 0
    public var batches = 0
    /// Records handed to the sink and not settled yet (in progress reports; 0 in the final summary).
    public var inFlight = 0
    /// Set when the pass stopped early because the sink asked it to, or the destination looked down.
    public var halt: SinkHalt?
    /// The queue after the pass.
    public var remaining: QueueStats?
    /// Set when the pass did not run because another drainer holds the queue's drain lock.
    public var lockHolder: DrainLockHolder?

    public init() {}

    /// How the pass ended, for exit codes and status.
    public var result: DrainResult {
        if lockHolder != nil { return .anotherDrainerRunning }
        if halt?.kind == .configuration { return .sinkMisconfigured }
        if dead > 0 { return .someDead }
        if halt != nil || (remaining.map { $0.pending + $0.leased } ?? 0) > 0 { return .recordsRemain }
        return .allDelivered
    }
}

/// The outcome of a pass, with the exit status `queuectl drain` reports for it.
public enum DrainResult: String, Sendable, Hashable, CaseIterable {
    /// Everything claimable was delivered and nothing is left (exit 0).
    case allDelivered = "all_delivered"
    /// Some records were dead-lettered in this pass (exit 10); see `queuectl dead list`.
    case someDead = "some_dead"
    /// Records remain: waiting for a retry, or the destination is unavailable (exit 11).
    case recordsRemain = "records_remain"
    /// The sink's configuration is wrong (bad key, wrong URL); nothing was lost, fix it and drain again (exit 12).
    case sinkMisconfigured = "sink_misconfigured"
    /// Another drain pass (another daemon, or `queuectl drain --local`) holds the queue's drain lock (exit 13).
    case anotherDrainerRunning = "another_drainer_running"
}
