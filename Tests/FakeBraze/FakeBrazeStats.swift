/// Request counters.
public struct FakeBrazeStats: Sendable, Hashable {
    /// `/users/track` requests received (answered or not).
    public var requests = 0
    /// Answers by HTTP status (a reset-mid-response counts under the status it started to send).
    public var byStatus: [Int: Int] = [:]
    /// Connections closed without an answer.
    public var dropped = 0
    /// Answers cut off half way.
    public var resetMidResponse = 0
    /// Requests left unanswered on purpose (`hangRate`).
    public var hung = 0
    /// Objects received in 2xx requests (accepted or refused).
    public var objectsReceived = 0
    /// Times a request arrived naming a user that another request in flight also names (must stay 0: per-user
    /// order needs a user's requests one after another).
    public var userOverlaps = 0
    /// The most `/users/track` requests in flight at once.
    public var maxInFlight = 0
    /// The most `/users/track` requests that arrived within any 1 s window.
    public var maxRequestsInOneSecond = 0
}
