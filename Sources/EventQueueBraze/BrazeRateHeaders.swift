/// Braze's `X-RateLimit-Remaining` and `X-RateLimit-Reset` (UTC epoch seconds; lowercase over HTTP/2), read
/// from every answer so the sink slows down before Braze refuses anything.
struct BrazeRateHeaders: Sendable, Hashable {
    var remaining: Int?
    var resetAtMilliseconds: Int64?

    /// Values out of any plausible range (negative, or a reset past year 33658) are ignored: the headers are
    /// outside input.
    init(_ headers: [(name: String, value: String)]) {
        func value(_ name: String) -> Int64? {
            guard let text = headers.first(where: { $0.name.lowercased() == name })?.value else { return nil }
            return Int64(text.filter { $0 != " " && $0 != "\t" })
        }
        if let remaining = value("x-ratelimit-remaining"), remaining >= 0, remaining <= Int64(Int32.max) {
            self.remaining = Int(remaining)
        }
        if let reset = value("x-ratelimit-reset"), reset > 0, reset < 1_000_000_000_000 {
            resetAtMilliseconds = reset * 1000
        }
    }
}

/// Told about every `/users/track` request, for metrics (the daemon's `/metrics`); optional.
public protocol BrazeRequestObserver: Sendable {
    /// A request was answered (`status`), or failed without an answer (`nil`), after `latency`.
    func requestFinished(status: Int?, latency: Duration)
}
