/// What sends one request to its endpoint and interprets the answer: a `BrazeEndpoint` (pacing, resending after a
/// 429, the HTTP client), or a scripted stand-in in a test.
protocol BrazeRequestSender: Sendable {
    /// Sends `body` and returns the interpreted answer; `nil` when it was not sent (the delivery was cancelled):
    /// its records and the rest get no outcome, so the drain loop hands them back untouched.
    func send(_ body: BrazeRequestBody) async -> BrazeAnswer?
    /// Whether the endpoint answered a request (anything but a network failure, a timeout or a 5xx) within the last
    /// `span`: then it is up, and a request failing now may fail for what it carries (issue 40 #2).
    func answered(within span: Duration) -> Bool
}
