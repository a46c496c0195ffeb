import Foundation

/// Compares what writers say they enqueued with what the sink received, in the manner of Jepsen's total-queue
/// checker:
///
/// - a record whose enqueue returned (an `ok`) must be delivered: otherwise it is *lost*;
/// - a record whose enqueue was attempted but never confirmed (the writer was killed mid-call, or the call
///   failed) is *indeterminate*: it may be delivered or not, and is never counted as lost or unexpected;
/// - a delivered record that no writer ever attempted is *unexpected*;
/// - deliveries beyond the first of a record are *duplicated* (a crash may redeliver the batch that was between
///   "sink accepted" and "ack committed");
/// - each user's records must first arrive in id order, else *reordered* (records whose id is unknown, such as
///   indeterminate ones seen at Braze, are not judged).
///
/// `scripts/check-history` implements the same rules over the same files; the two must agree
/// (`HistoryCheckerTests`).
public struct HistoryChecker {
    /// One record as the sink received it, in arrival order.
    public struct Delivery: Hashable, Sendable {
        public var marker: String
        public var user: String
        /// The queue id when the sink shows it (JSONL sink), else `nil` (Braze: taken from the writer's `ok`).
        public var id: Int64?

        public init(marker: String, user: String, id: Int64?) {
            self.marker = marker
            self.user = user
            self.id = id
        }
    }

    public struct Report: CustomStringConvertible, Sendable {
        /// Records whose enqueue was confirmed.
        public var enqueued = 0
        /// Records attempted (confirmed or not).
        public var attempted = 0
        /// Deliveries, duplicates included.
        public var delivered = 0
        public var lost: [String] = []
        /// Marker -> number of deliveries, for markers delivered more than once.
        public var duplicated: [String: Int] = [:]
        public var reordered: [String] = []
        public var unexpected: [String] = []
        /// Attempted, never confirmed.
        public var indeterminate: [String] = []
        /// Indeterminate records that were delivered after all.
        public var indeterminateDelivered = 0

        /// Deliveries beyond the first of each record.
        public var duplicateDeliveries: Int { duplicated.values.reduce(0) { $0 + $1 - 1 } }

        /// True when nothing was lost, unexpected or reordered (duplicates are judged by the caller).
        public var isValid: Bool { lost.isEmpty && unexpected.isEmpty && reordered.isEmpty }

        /// The line `scripts/check-history` prints first; the two must print the same one.
        public var summaryLine: String {
            "lost \(lost.count), duplicated \(duplicateDeliveries), reordered \(reordered.count), "
                + "unexpected \(unexpected.count), indeterminate \(indeterminate.count)"
        }

        public var description: String {
            "enqueued \(enqueued), delivered \(delivered), lost \(lost.count), duplicated \(duplicateDeliveries) "
                + "(\(duplicated.count) records), reordered \(reordered.count), unexpected \(unexpected.count)"
                + (attempted > enqueued
                    ? ", indeterminate \(indeterminate.count) (\(indeterminateDelivered) delivered)" : "")
                + (lost.isEmpty ? "" : "; lost e.g. \(lost.sorted().prefix(5))")
                + (reordered.isEmpty ? "" : "; reordered e.g. \(reordered.prefix(3))")
                + (unexpected.isEmpty ? "" : "; unexpected e.g. \(unexpected.sorted().prefix(5))")
        }
    }

    /// `enqueued`: markers whose enqueue returned success (and nothing indeterminate). `delivered`: in arrival order.
    public static func check(enqueued: Set<String>, delivered: [Delivery]) -> Report {
        var history = WriterHistory()
        for marker in enqueued { history.confirm(marker, id: nil) }
        return check(history, delivered: delivered)
    }

    /// The full check: `history` from the writers' attempt/ok logs, `delivered` in arrival order.
    public static func check(_ history: WriterHistory, delivered: [Delivery]) -> Report {
        var report = Report(
            enqueued: history.confirmed.count, attempted: history.attempted.count, delivered: delivered.count)
        var counts: [String: Int] = [:]
        var highestFirstID: [String: Int64] = [:]
        for delivery in delivered {
            counts[delivery.marker, default: 0] += 1
            guard counts[delivery.marker] == 1 else { continue }  // order is judged on first arrivals
            var known = delivery.id
            if known == nil, let confirmedID = history.confirmed[delivery.marker] { known = confirmedID }
            guard let id = known else { continue }
            if let previous = highestFirstID[delivery.user], id < previous {
                report.reordered.append("\(delivery.user): \(id) after \(previous)")
            }
            highestFirstID[delivery.user] = max(id, highestFirstID[delivery.user] ?? id)
        }
        let delivered = Set(counts.keys)
        report.lost = Array(Set(history.confirmed.keys).subtracting(delivered))
        report.duplicated = counts.filter { $0.value > 1 }
        report.unexpected = Array(delivered.subtracting(history.attempted))
        let indeterminate = history.indeterminate
        report.indeterminate = Array(indeterminate)
        report.indeterminateDelivered = indeterminate.intersection(delivered).count
        return report
    }
}

/// What writers say they did, read from their logs. The format (also documented in `scripts/check-history`):
///
///     attempt M1[,M2...]              written (and flushed) before the enqueue call
///     ok M1[,M2...] [ID1[,ID2...]]    written after it returned success, with the ids when known
///
/// One line per call; a bulk enqueue lists all its markers on one line. Markers contain no whitespace or commas.
/// Blank lines and lines starting with `#` are ignored, and so is an unterminated last line (a writer killed
/// while writing it). Any other line is an error.
public struct WriterHistory: Sendable {
    /// Every marker ever attempted (an `ok` implies an attempt).
    public private(set) var attempted: Set<String> = []
    /// Confirmed markers and their ids when the writer knew them.
    public private(set) var confirmed: [String: Int64?] = [:]

    public init() {}

    /// Attempted, never confirmed.
    public var indeterminate: Set<String> { attempted.subtracting(confirmed.keys) }

    public mutating func attempt(_ marker: String) {
        attempted.insert(marker)
    }

    public mutating func confirm(_ marker: String, id: Int64?) {
        attempted.insert(marker)
        if let id {
            confirmed[marker] = id
        } else if confirmed[marker] == nil {
            confirmed[marker] = .some(nil)
        }
    }

    /// Reads writer logs in the format above.
    public static func read(logs paths: [String]) throws -> WriterHistory {
        var history = WriterHistory()
        for path in paths {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            _ = lines.popLast()  // empty after the final newline, or the unterminated line of a killed writer
            for (index, line) in lines.enumerated() {
                try history.apply(line, at: "\(path):\(index + 1)")
            }
        }
        return history
    }

    mutating func apply(_ line: Substring, at location: String) throws {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard let verb = fields.first, !verb.hasPrefix("#") else { return }
        let markers = fields.count > 1 ? fields[1].split(separator: ",").map(String.init) : []
        switch verb {
        case "attempt" where fields.count == 2 && !markers.isEmpty:
            for marker in markers { attempt(marker) }
        case "ok" where (fields.count == 2 || fields.count == 3) && !markers.isEmpty:
            var ids: [Int64?] = Array(repeating: nil, count: markers.count)
            if fields.count == 3 {
                let parsed = fields[2].split(separator: ",").map { Int64($0) }
                guard parsed.count == markers.count, parsed.allSatisfy({ $0 != nil }) else {
                    throw ScratchError(
                        message: "\(location): the ok line needs one integer id per marker: \(line)")
                }
                ids = parsed
            }
            for (marker, id) in zip(markers, ids) { confirm(marker, id: id) }
        default:
            throw ScratchError(
                message: "\(location): not a writer log line (attempt MARKERS | ok MARKERS [IDS]): \(line)")
        }
    }
}

/// Reads what a sink received: the JSONL sink's lines and the fake Braze server's `GET /_received` lines.
public enum SinkHistory {
    /// The key that holds a record's marker: `properties[key]`, else the object's own member `key`.
    public static let defaultMarkerKey = "marker"

    /// The JSONL sink: `{"id":N,"type":"event","object":{...}}` per line.
    public static func jsonl(_ path: String, markerKey: String = defaultMarkerKey) throws -> [HistoryChecker.Delivery] {
        try lines(path).map { line, location in
            guard let id = (line["id"] as? NSNumber)?.int64Value, let object = line["object"] as? [String: Any] else {
                throw ScratchError(message: "\(location): a JSONL sink line needs \"id\" and \"object\"")
            }
            return delivery(object, id: id, markerKey: markerKey)
        }
    }

    /// The fake Braze server's `GET /_received`: `{"accepted":B,"array":A,"index":I,"request":N,"object":{...}}`
    /// per object, in arrival order. Refused objects (`accepted` false) were not delivered and are skipped.
    public static func brazeReceived(_ path: String, markerKey: String = defaultMarkerKey) throws
        -> [HistoryChecker.Delivery]
    {
        try lines(path).compactMap { line, location in
            guard let accepted = line["accepted"] as? Bool, let object = line["object"] as? [String: Any] else {
                throw ScratchError(message: "\(location): a received line needs \"accepted\" and \"object\"")
            }
            return accepted ? delivery(object, id: nil, markerKey: markerKey) : nil
        }
    }

    /// The marker of a Braze object, or `nil`.
    public static func marker(of object: [String: Any], key: String = defaultMarkerKey) -> String? {
        if let properties = object["properties"] as? [String: Any], let marker = properties[key] as? String {
            return marker
        }
        return object[key] as? String
    }

    /// The user the way the queue's `user_key` column names it (`external_id:u1`, `user_alias:LABEL:NAME`, ...).
    public static func user(of object: [String: Any]) -> String {
        for field in ["external_id", "braze_id"] {
            if let value = object[field] as? String { return "\(field):\(value)" }
        }
        if let alias = object["user_alias"] as? [String: Any] {
            return "user_alias:\(alias["alias_label"] as? String ?? ""):\(alias["alias_name"] as? String ?? "")"
        }
        for field in ["email", "phone"] {
            if let value = object[field] as? String { return "\(field):\(value)" }
        }
        return "?"
    }

    static func delivery(_ object: [String: Any], id: Int64?, markerKey: String) -> HistoryChecker.Delivery {
        // A record without a marker was enqueued by nobody the history knows: it shows up as unexpected.
        let marker = marker(of: object, key: markerKey) ?? "(no marker) " + String(describing: object).prefix(80)
        return HistoryChecker.Delivery(marker: marker, user: user(of: object), id: id)
    }

    static func lines(_ path: String) throws -> [([String: Any], String)] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var result: [([String: Any], String)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.isEmpty {
            let location = "\(path):\(index + 1)"
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw ScratchError(message: "\(location): not a JSON object: \(line.prefix(200))")
            }
            result.append((object, location))
        }
        return result
    }
}
