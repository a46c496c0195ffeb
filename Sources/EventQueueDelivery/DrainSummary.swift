import EventQueue

/// How a drain pass is run.
public struct DrainOptions: Sendable, Hashable {
    /// Records claimed (and handed to the sink) at a time.
    public var batchSize: Int
    /// How long a claim is held before someone else may take it; renewed every third of it while the sink
    /// is still working, so a slow delivery never loses its lease. Kept within 1 s and `ClockHorizon` (15 min):
    /// a longer expiry in the file would read as a clock that went back.
    public var leaseMilliseconds: Int64
    /// Failed attempts after which a record is dead-lettered.
    public var maxAttempts: Int
    public var backoff: Backoff
    /// A pass ends early (as `.unavailable`) after this many batches in a row in which nothing was delivered
    /// and every record is to be retried: the destination is down, and hammering it helps no one.
    public var haltAfterFailedBatches: Int
    /// Checkpoint the WAL and vacuum freed pages after the pass, so the files shrink again.
    public var maintenanceAfterPass: Bool
    /// Batches handed to the sink at once (`--max-in-flight`), capped by the sink's own
    /// `maxConcurrentDeliveries`. 1 delivers one batch after another. A SIGKILL redelivers at most the records
    /// of these batches (`maxInFlight` × the claim size), which were in flight or delivered but not yet acked.
    public var maxInFlight: Int

    /// The default of `--max-in-flight`: enough requests to hide a 50-150 ms round trip to Braze, few enough
    /// that a crash redelivers little. 24, not 16: each request slot also waits for the commit that acks its
    /// batch and claims the next (about 14 ms here), so 16 slots at 50 ms delivered 18,674 records/s and 24
    /// delivered 25,184 (docs/PERFORMANCE.md section 9). 24 × 75 = 1,800 records also stays below the users a
    /// large backlog spreads over (2,000 in the benchmark), past which claims come back short.
    public static let defaultMaxInFlight = 24

    public init(
        batchSize: Int = 100, leaseMilliseconds: Int64 = 60_000, maxAttempts: Int = 10,
        backoff: Backoff = Backoff(), haltAfterFailedBatches: Int = 3, maintenanceAfterPass: Bool = true,
        maxInFlight: Int = 1
    ) {
        self.maxInFlight = max(1, maxInFlight)
        self.batchSize = max(1, batchSize)
        self.leaseMilliseconds = min(max(1_000, leaseMilliseconds), ClockHorizon.longestWaitMilliseconds)
        self.maxAttempts = max(1, maxAttempts)
        self.backoff = backoff
        self.haltAfterFailedBatches = max(1, haltAfterFailedBatches)
        self.maintenanceAfterPass = maintenanceAfterPass
    }
}

/// Counts of one drain pass, reported as it goes and at its end.
public struct DrainSummary: Sendable, Hashable {
    public var delivered = 0
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

    /// The exit status `queuectl drain` reports for it (from the one table, `ExitStatus`).
    public var exitStatus: ExitStatus {
        switch self {
        case .allDelivered: return .success
        case .someDead: return .someDead
        case .recordsRemain: return .recordsRemain
        case .sinkMisconfigured: return .sinkMisconfigured
        case .anotherDrainerRunning: return .anotherDrainerRunning
        }
    }

    public var exitCode: Int32 { exitStatus.rawValue }
}
