/// What an answer's headers say about the rate: Braze's `X-RateLimit-Limit`, `-Remaining` and `-Reset` (UTC epoch
/// seconds), and `Retry-After` (seconds), honoured when present.
package struct BrazeRateHeaders: Sendable, Hashable {
    package var limit: Int?
    package var remaining: Int?
    package var resetAtMilliseconds: Int64?
    var retryAfterMilliseconds: Int64?

    /// No headers: what an answer without any says.
    package init() {}

    /// Values out of any plausible range (negative, or a reset past year 33658) are ignored: the headers are
    /// outside input.
    init(_ headers: [(name: String, value: String)]) {
        if let limit = Self.integer("x-ratelimit-limit", in: headers), limit > 0, limit <= Int64(Int32.max) {
            self.limit = Int(limit)
        }
        if let remaining = Self.integer("x-ratelimit-remaining", in: headers), remaining >= 0,
            remaining <= Int64(Int32.max)
        {
            self.remaining = Int(remaining)
        }
        if let reset = Self.integer("x-ratelimit-reset", in: headers), reset > 0, reset < 1_000_000_000_000 {
            resetAtMilliseconds = reset * 1000
        }
        if let seconds = Self.integer("retry-after", in: headers), seconds >= 0, seconds < 1_000_000_000 {
            retryAfterMilliseconds = seconds * 1000
        }
    }

    /// How long Braze asked us to wait, relative to `nowMilliseconds`: `Retry-After` when present, else the reset
    /// minus now (0 when it is already past), else `nil`.
    package func retryHint(nowMilliseconds: Int64) -> Int64? {
        if let retryAfterMilliseconds { return retryAfterMilliseconds }
        return resetAtMilliseconds.map { max(0, $0 - nowMilliseconds) }
    }

    /// The value of header `name` (lowercase), looked up case-insensitively.
    static func value(_ name: String, in headers: [(name: String, value: String)]) -> String? {
        headers.first { $0.name.lowercased() == name }?.value
    }

    private static func integer(_ name: String, in headers: [(name: String, value: String)]) -> Int64? {
        value(name, in: headers).flatMap { Int64($0.filter { $0 != " " && $0 != "\t" }) }
    }
}
