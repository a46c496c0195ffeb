/// What became of one record handed to a sink.
public enum DeliveryOutcome: Sendable, Hashable {
    /// Accepted by the destination: ack (delete) it.
    case delivered
    /// Not accepted this time; try again later. `cause` says whose failure it was, and so what the retry costs
    /// (`RetryCause`: only a failure of the record itself uses up an attempt). `after` (milliseconds) is the
    /// sink's own hint (a `Retry-After`).
    case retry(reason: String, afterMilliseconds: Int64? = nil, cause: RetryCause)
    /// Refused for good (malformed for the destination): dead-letter it with the reason, now.
    case rejected(reason: String)
}

/// Why a record is to be retried: the one classification of sink failures, which decides what a retry costs the
/// record and what it says about the sink (`Settlement` applies it; `SinkAvailability` listens to it).
///
/// | cause | examples (Braze) | attempt | when the record is tried again | the sink |
/// |---|---|---|---|---|
/// | `record` | a sink that names the record as failed but not refused for good | counts toward `maxAttempts` | per-record backoff, or the hint | answered: up |
/// | `destination` | 5xx, 408, a timeout, connection refused or reset, DNS, a TLS handshake that times out, a full disk under a file | never | at once: due now, with its id; the sink-level state decides when anything is sent | suspect: a few in a row make it unavailable |
/// | `backPressure` | 429 handed back to the loop | never | after the hint | answered: up |
///
/// Failures that are not retries: a record refused for good (`DeliveryOutcome.rejected`: a 201 whose `errors`
/// name it, a 400 bisected down to it) is dead at once and counts an attempt; a misconfigured sink (`SinkHalt`
/// `.configuration`: 401, 403, 404, a redirect, a TLS certificate that cannot be verified) stops the pass and
/// hands every record back untouched.
///
/// Why time and not attempts for `destination`: such a failure says nothing about the record. Counting it made
/// an outage of a few minutes turn every record into a dead letter (10 attempts of 1 s to 5 min backoff), and a
/// dead letter retried later went out after the same user's newer records (issue 30).
public enum RetryCause: String, Sendable, Hashable {
    /// The record itself failed: counts an attempt; the record backs off on its own.
    case record
    /// The destination failed and said nothing about the record: no attempt, no per-record backoff.
    case destination
    /// Back-pressure (a rate limit): no attempt; the destination is up and asked for time.
    case backPressure = "back_pressure"
}
