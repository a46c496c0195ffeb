import EventQueue

/// What becomes of every record of one delivered batch (by `RetryCause`), and what the batch says about the
/// destination: a pure value, tested apart from the writes that carry it out (`Drainer.settle`).
struct Settlement: Sendable {
    /// Delivered: ack (delete) them.
    var delivered: [Int64] = []
    /// Refused for good: dead-letter them with the reason.
    var rejected: [String: [Int64]] = [:]
    /// To retry, grouped by reason, hint and cause.
    var retries: [RetryGroup: [Int64]] = [:]
    /// Handed back untouched, claimable at once (a cancelled delivery, a misconfigured sink).
    var released: [Int64] = []
    var halt: SinkHalt?

    struct RetryGroup: Hashable, Sendable {
        var reason: String
        var afterMilliseconds: Int64?
        var cause: RetryCause

        /// Only a failure of the record itself uses up one of its attempts.
        var countsAsAttempt: Bool { cause == .record }
    }

    /// The reason of the batch's last record (in the batch's order) that failed for the destination's sake.
    private(set) var lastDestinationFailure: String?
    /// The destination answered something for this batch (a 401 is an answer: the sink is up, the key is wrong).
    private(set) var answered = false

    /// How long an erasure or identity call waits after its endpoint failed: the pace of a probe in an outage.
    static var usersOutageWait: Int64 { SinkAvailability.Policy().firstProbeDelay.wholeMilliseconds }

    /// What the batch says about the destination, for `SinkAvailability`. `probe`: the batch was the probe.
    func signal(probe: Bool) -> SinkAvailability.Signal {
        let declaredDown = halt?.kind == .unavailable
        let failure = lastDestinationFailure ?? (declaredDown ? halt?.reason : nil)
        return SinkAvailability.Signal(answered: answered, failure: failure, declaredDown: declaredDown, probe: probe)
    }

    /// Decides every record's fate. `cancelled`: records the sink said nothing about go back untouched.
    init(records: [OutgoingRecord], report: DeliveryReport, cancelled: Bool) {
        halt = report.halt
        if report.halt?.kind == .configuration { answered = true }
        for record in records {
            // Only records speak for the availability (of `/users/track`): erasures and identity calls go to
            // another endpoint with its own outages. Their failure waits `usersOutageWait` instead (no attempt),
            // where a record would be due at once and sent again in a loop.
            let speaks = record.erasure == nil && !record.kind.isIdentityCall
            var outcome = report.outcomes[record.id]
            if !speaks, case .retry(let reason, _, .destination)? = outcome {
                outcome = .retry(reason: reason, afterMilliseconds: Self.usersOutageWait, cause: .backPressure)
            }
            switch outcome {
            case .delivered:
                delivered.append(record.id)
                answered = answered || speaks
            case .rejected(let reason):
                rejected[reason, default: []].append(record.id)
                answered = answered || speaks
            case .retry(let reason, let after, let cause):
                retries[RetryGroup(reason: reason, afterMilliseconds: after, cause: cause), default: []]
                    .append(record.id)
                if cause == .destination {
                    if speaks { lastDestinationFailure = reason }
                } else {
                    answered = answered || speaks
                }
            case nil:
                if cancelled || report.halt?.kind == .configuration {
                    released.append(record.id)
                } else {
                    // The sink said nothing about the record: no fault of the record's.
                    let reason = report.halt?.reason ?? "the sink reported no outcome"
                    retries[RetryGroup(reason: reason, afterMilliseconds: nil, cause: .destination), default: []]
                        .append(record.id)
                    lastDestinationFailure = reason
                }
            }
        }
    }
}
