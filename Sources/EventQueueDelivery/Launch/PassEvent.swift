import EventQueue

/// What a follower of a pass (`POST /launch?wait=true`, `queuectl drain --wait`) receives.
public enum PassEvent: Sendable {
    /// After every batch: the counts so far.
    case progress(DrainSummary)
    /// The pass ended.
    case summary(DrainSummary)
    /// The pass failed on a queue error (`cause`), or the daemon stopped before it could run (`cause` is nil).
    /// The cause travels to the follower so that it exits as `drain --local` would (75 when the queue was busy).
    case failed(String, cause: QueueError?)
}
