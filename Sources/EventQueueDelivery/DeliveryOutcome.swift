/// What became of one record handed to a sink.
public enum DeliveryOutcome: Sendable, Hashable {
    /// Accepted by the destination: ack (delete) it.
    case delivered
    /// Not accepted this time; try again later. `after` (milliseconds) is the sink's own hint (a
    /// `Retry-After`), else the drain loop backs off exponentially with jitter. A rate limit is not the
    /// record's fault, so it passes `countsAsAttempt: false` and never uses up the record's attempts.
    case retry(reason: String, afterMilliseconds: Int64? = nil, countsAsAttempt: Bool = true)
    /// Refused for good (malformed for the destination): dead-letter it with the reason, now.
    case rejected(reason: String)
}
