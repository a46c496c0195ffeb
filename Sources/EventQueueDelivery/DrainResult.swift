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
