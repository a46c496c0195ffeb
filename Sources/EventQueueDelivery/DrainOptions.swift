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
    /// The backoff of a record whose own failure is retried (`RetryCause.record`); a record that failed for the
    /// destination's sake has none: the sink's availability decides when it goes out again.
    public var backoff: Backoff
    /// When the sink counts as unavailable and how it is probed (`SinkAvailability`): it replaces the "N batches
    /// in a row failed" halt, which ended a pass but left every record counting attempts on its own backoff.
    public var availability: SinkAvailability.Policy
    /// Checkpoint the WAL and vacuum freed pages after the pass, so the files shrink again.
    public var maintenanceAfterPass: Bool
    /// Batches handed to the sink at once (`--max-in-flight`, default `defaultMaxInFlight`), capped by the sink's
    /// own `maxConcurrentDeliveries` (a file takes one at a time). 1 delivers one batch after another. A SIGKILL redelivers at most the records
    /// of these batches (`maxInFlight` × the claim size), which were in flight or delivered but not yet acked.
    public var maxInFlight: Int
    /// How long a user's erasure waits after a request that carried the user's records ended without Braze's
    /// answer (a timeout, a reset, a 5xx, a cancelled delivery): Braze may still apply such a request
    /// (docs/RELIABILITY.md, "Hardening VI"). 5 minutes: ten times the 30 s request timeout, and past Braze's
    /// own advice of "up to minutes" between dependent calls; an erasure is due within a month, not seconds.
    public var erasureHoldAfterUnanswered: Duration = .seconds(300)

    /// The default of `--max-in-flight`: enough requests to hide a 50-150 ms round trip to Braze, few enough
    /// that a crash redelivers little. 24, not 16: each request slot also waits for the commit that acks its
    /// batch and claims the next (about 14 ms here), so 16 slots at 50 ms delivered 18,674 records/s and 24
    /// delivered 25,184 (docs/PERFORMANCE.md section 9). 24 × 75 = 1,800 records also stays below the users a
    /// large backlog spreads over (2,000 in the benchmark), past which claims come back short.
    public static let defaultMaxInFlight = 24

    public init(
        batchSize: Int = 100, leaseMilliseconds: Int64 = 60_000, maxAttempts: Int = 10,
        backoff: Backoff = Backoff(), availability: SinkAvailability.Policy = SinkAvailability.Policy(),
        maintenanceAfterPass: Bool = true,
        maxInFlight: Int = DrainOptions.defaultMaxInFlight
    ) {
        self.maxInFlight = max(1, maxInFlight)
        self.batchSize = max(1, batchSize)
        self.leaseMilliseconds = min(max(1_000, leaseMilliseconds), ClockHorizon.longestWaitMilliseconds)
        self.maxAttempts = max(1, maxAttempts)
        self.backoff = backoff
        self.availability = availability
        self.maintenanceAfterPass = maintenanceAfterPass
    }
}
