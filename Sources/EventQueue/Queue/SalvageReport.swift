/// What `QueueSalvage.run` copied out of a damaged queue file, and what it could not.
public struct SalvageReport: Sendable, Hashable {
    /// The damaged file, read only.
    public var source: String
    /// The new queue file the records were copied into.
    public var destination: String
    /// Records copied into the new file: pending ones (a leased record becomes pending again) and dead letters.
    public var recoveredPending = 0
    /// Dead letters copied into the new file (still dead, with their reasons).
    public var recoveredDead = 0
    /// Live records the old file's `records_live` index lists but whose rows could not be read (they were on a
    /// damaged page). Dead letters on a damaged page cannot be counted (their index is not covering).
    public var unreadable = 0
    /// The ids counted in `unreadable` (the first 1,000), so they can be looked up elsewhere (logs, the sink).
    public var unreadableIDs: [Int64] = []
    /// Rows that could be read but are not valid records: counted, not copied.
    public var invalid = 0
    /// Ranges of ids (inclusive) where the records table could not be read at all.
    public var damagedRanges: [ClosedRange<Int64>] = []
    /// Idempotency keys of recently delivered records carried over (so retried enqueues stay no-ops).
    public var deliveredKeys = 0
    /// `false` when the old file's live index could not be read to its end: `unreadable` is then a lower bound.
    public var indexComplete = true
    /// Every row salvage met: each read row (copied or invalid) and each unreadable one, so that
    /// `recovered + invalid + unreadable == seen`.
    public var seen = 0
    /// Copied records that got a new id (theirs out of range or taken): their order among their user's may change.
    public var renumbered = 0
    /// Copied values brought into range: retry times beyond the clock horizon, attempts at or over the budget,
    /// dead-letter and delivered-key dates in the future.
    public var clamped = 0
    /// One line per invalid row (the first 100): its id and what was wrong.
    public var invalidReasons: [String] = []

    /// Records copied in all.
    public var recovered: Int { recoveredPending + recoveredDead }
    /// Every record of the old file is in the new one.
    public var isComplete: Bool { unreadable == 0 && invalid == 0 && damagedRanges.isEmpty && indexComplete }
}
