/// What `retryDeadChecked` did.
public struct DeadRetryReport: Sendable, Hashable {
    /// Dead letters made pending again.
    public var retried: [Int64] = []
    /// Dead letters whose payload still breaks a rule: left dead, `last_error` updated to the rule they break now.
    public var stillInvalid: [(id: Int64, reason: String)] = []

    /// Equal when the same ids were retried and stayed dead for the same reasons (tuples are not `Equatable`).
    public static func == (lhs: DeadRetryReport, rhs: DeadRetryReport) -> Bool {
        lhs.retried == rhs.retried && lhs.stillInvalid.map(\.id) == rhs.stillInvalid.map(\.id)
            && lhs.stillInvalid.map(\.reason) == rhs.stillInvalid.map(\.reason)
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(retried)
        for item in stillInvalid {
            hasher.combine(item.id)
            hasher.combine(item.reason)
        }
    }
}
