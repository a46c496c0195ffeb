/// Compares what writers say they enqueued with what the sink received, in the manner of Jepsen's total-queue
/// checker: every acknowledged enqueue must be delivered (lost = 0), nothing may be delivered that nobody
/// enqueued, duplicates are counted (a crash may redeliver the batch that was between "sink accepted" and
/// "ack committed"), and each user's records must first arrive in id order.
struct HistoryChecker {
    struct Delivery: Hashable {
        var marker: String
        var user: String
        var id: Int64
    }

    struct Report: CustomStringConvertible {
        var enqueued = 0
        var delivered = 0
        var lost: [String] = []
        var duplicated: [String: Int] = [:]
        var reordered: [String] = []
        var unexpected: [String] = []

        var duplicateDeliveries: Int { duplicated.values.reduce(0) { $0 + $1 - 1 } }

        var description: String {
            "enqueued \(enqueued), delivered \(delivered), lost \(lost.count), duplicated \(duplicateDeliveries) "
                + "(\(duplicated.count) records), reordered \(reordered.count), unexpected \(unexpected.count)"
                + (lost.isEmpty ? "" : "; lost e.g. \(lost.sorted().prefix(5))")
                + (reordered.isEmpty ? "" : "; reordered e.g. \(reordered.prefix(3))")
                + (unexpected.isEmpty ? "" : "; unexpected e.g. \(unexpected.sorted().prefix(5))")
        }
    }

    /// `enqueued`: markers whose enqueue returned success. `delivered`: sink lines in arrival order.
    static func check(enqueued: Set<String>, delivered: [Delivery]) -> Report {
        var report = Report(enqueued: enqueued.count, delivered: delivered.count)
        var counts: [String: Int] = [:]
        var lastFirstDeliveryID: [String: Int64] = [:]
        var seen: Set<String> = []
        for delivery in delivered {
            counts[delivery.marker, default: 0] += 1
            guard seen.insert(delivery.marker).inserted else { continue }  // order is judged on first arrivals
            if let previous = lastFirstDeliveryID[delivery.user], delivery.id < previous {
                report.reordered.append("\(delivery.user): \(delivery.id) after \(previous)")
            }
            lastFirstDeliveryID[delivery.user] = max(delivery.id, lastFirstDeliveryID[delivery.user] ?? delivery.id)
        }
        report.lost = Array(enqueued.subtracting(counts.keys))
        report.duplicated = counts.filter { $0.value > 1 }
        report.unexpected = Array(Set(counts.keys).subtracting(enqueued))
        return report
    }
}
