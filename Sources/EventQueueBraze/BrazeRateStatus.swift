/// How a `BrazeSink` is pacing itself (`BrazeRatePolicy.snapshot`), for `/metrics` and `GET /status`.
public struct BrazeRateStatus: Sendable, Hashable {
    public var requestsInFlight: Int
    /// Requests allowed in flight now: 1 at first (slow start), one more per answer up to `maxInFlight`, halved
    /// by each 429 round.
    public var window: Int
    /// Requests that waited before starting (pacing across the window, a reset, a 429's pause,
    /// `--max-requests-per-second`), and for how long in all.
    public var rateLimitWaits: Int
    public var rateLimitWaitSeconds: Double
    /// 429 answers received (each is sent again once the window allows), and the rounds of waiting they made
    /// (the 429s of one overshoot, answered together, are one round).
    public var rateLimitedRequests: Int
    public var rateLimitRounds: Int
    /// The last `X-RateLimit-Limit` and `X-RateLimit-Remaining` seen, and the reset of that window (UTC Unix
    /// milliseconds); `nil` until an answer carried them.
    public var limit: Int?
    public var remaining: Int?
    public var resetAtMilliseconds: Int64?
    /// Until when (UTC Unix milliseconds) no request may start; `nil` when one may start now.
    public var waitingUntilMilliseconds: Int64?
}
