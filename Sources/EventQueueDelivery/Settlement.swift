import EventQueue

/// What becomes of every record of one delivered batch: the one place that decides a record's next state.
///
/// A pure value computed from the sink's report, so the decision reads (and is tested) apart from the SQLite
/// writes that carry it out (`Drainer.settle`).
struct Settlement: Sendable {
    /// Delivered: ack (delete) them.
    var delivered: [Int64] = []
    /// Refused for good: dead-letter them with the reason.
    var rejected: [String: [Int64]] = [:]
    /// To retry later, grouped by reason, hint and whether the attempt counts.
    var retries: [RetryGroup: [Int64]] = [:]
    /// Handed back untouched, claimable at once (a cancelled delivery, a misconfigured sink).
    var released: [Int64] = []
    /// The sink asked the pass to stop.
    var halt: SinkHalt?

    struct RetryGroup: Hashable, Sendable {
        var reason: String
        var afterMilliseconds: Int64?
        var countsAsAttempt: Bool
    }

    /// True when nothing was delivered and every record is to be retried, at least one of them for a failure
    /// that counts as an attempt: the destination looks down. A batch held back only by a rate limit (retries
    /// that cost no attempt) is back-pressure, and never counts toward the "batches in a row failed" halt.
    var allFailed: Bool {
        delivered.isEmpty && rejected.isEmpty && released.isEmpty && retries.keys.contains { $0.countsAsAttempt }
    }

    /// The reason of the batch's last record (in the batch's order) to be retried, for the "N batches in a row
    /// failed" halt.
    private(set) var lastError: String?

    /// Decides every record's fate. `cancelled`: the delivery task was cancelled (a shutdown that ran out of
    /// time), so records the sink said nothing about go back untouched rather than wait out their lease.
    init(records: [OutgoingRecord], report: DeliveryReport, cancelled: Bool) {
        halt = report.halt
        for record in records {
            switch report.outcomes[record.id] {
            case .delivered:
                delivered.append(record.id)
            case .rejected(let reason):
                rejected[reason, default: []].append(record.id)
            case .retry(let reason, let after, let counts):
                retries[RetryGroup(reason: reason, afterMilliseconds: after, countsAsAttempt: counts), default: []]
                    .append(record.id)
                lastError = reason
            case nil:
                if cancelled || report.halt?.kind == .configuration {
                    released.append(record.id)
                } else {
                    let reason = report.halt?.reason ?? "the sink reported no outcome"
                    retries[RetryGroup(reason: reason, afterMilliseconds: nil, countsAsAttempt: true), default: []]
                        .append(record.id)
                    lastError = reason
                }
            }
        }
    }
}
