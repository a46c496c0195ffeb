/// One finished pass, for `GET /status`.
public struct PassRecord: Sendable {
    public var startedAtMilliseconds: Int64
    public var endedAtMilliseconds: Int64
    /// `nil` when the pass failed on a queue error (see `error`).
    public var summary: DrainSummary?
    public var error: String?

    public init(
        startedAtMilliseconds: Int64, endedAtMilliseconds: Int64, summary: DrainSummary?, error: String? = nil
    ) {
        self.startedAtMilliseconds = startedAtMilliseconds
        self.endedAtMilliseconds = endedAtMilliseconds
        self.summary = summary
        self.error = error
    }
}
