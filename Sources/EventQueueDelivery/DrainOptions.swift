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
    /// When the sink counts as unavailable and how it is probed (`SinkAvailability`).
    public var availability: SinkAvailability.Policy
    /// Checkpoint the WAL and vacuum freed pages after the pass, so the files shrink again.
    public var maintenanceAfterPass: Bool
    /// Batches handed to the sink at once (`--max-in-flight`), capped by the sink's `maxConcurrentDeliveries`. A
    /// SIGKILL redelivers at most these batches' records.
    public var maxInFlight: Int
    /// How long a user's erasure waits after a request with the user's records ended unanswered, since Braze may
    /// still apply it (docs/OPERATING.md, "Erasing a user", says why 5 minutes).
    public var erasureHoldAfterUnanswered: Duration = .seconds(300)

    /// The default of `--max-in-flight`: enough requests to hide a 50-150 ms round trip plus the commit each slot
    /// waits for (docs/PERFORMANCE.md section 9), few enough that a crash redelivers little.
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
