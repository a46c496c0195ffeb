/// Told about every `/users/track` request, for metrics (the daemon's `/metrics`); optional.
public protocol BrazeRequestObserver: Sendable {
    /// A request was answered (`status`), or failed without an answer (`nil`), after `latency`.
    func requestFinished(status: Int?, latency: Duration)
}
