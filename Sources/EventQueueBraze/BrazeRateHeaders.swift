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
        func read(_ name: String, _ plausible: ClosedRange<Int64>) -> Int64? {
            let number = Self.value(name, in: headers).flatMap { Int64($0.filter { $0 != " " && $0 != "\t" }) }
            return number.flatMap { plausible.contains($0) ? $0 : nil }
        }
        limit = read("x-ratelimit-limit", 1...Int64(Int32.max)).map { Int($0) }
        remaining = read("x-ratelimit-remaining", 0...Int64(Int32.max)).map { Int($0) }
        resetAtMilliseconds = read("x-ratelimit-reset", 1...999_999_999_999).map { $0 * 1000 }
        retryAfterMilliseconds = read("retry-after", 0...999_999_999).map { $0 * 1000 }
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
}
