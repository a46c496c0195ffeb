import EventQueue

/// The summary of one drain pass as the tools show it: `queuectl drain --local` builds it, the daemon sends it on
/// `POST /launch?wait=true`, and `queuectl drain --wait` reads it back: one type, so the local and the remote
/// `--json` and text are the same.
public struct DrainReport: Sendable, Hashable {
    /// The queue's counts after the pass.
    public struct Remaining: Sendable, Hashable {
        public var pending: Int
        public var leased: Int
        /// Every dead letter in the queue, not only this pass's.
        public var deadTotal: Int

        public init(pending: Int, leased: Int, deadTotal: Int) {
            self.pending = pending
            self.leased = leased
            self.deadTotal = deadTotal
        }
    }

    /// A summary that cannot be read back (a daemon of another version, or a damaged stream); the message says
    /// which key.
    public struct Malformed: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public var delivered: Int
    public var retried: Int
    public var dead: Int
    public var batches: Int
    public var inFlight: Int
    public var result: DrainResult
    /// Why the pass stopped early (`SinkHalt.description`), if it did.
    public var halt: String?
    public var remaining: Remaining?
    /// Who held the drain lock, when the pass did not run because of it.
    public var lockHolder: String?
    /// Why `drain --wait` stopped following the daemon's pass before its end (the sink unavailable, a long
    /// rate-limit wait, `--timeout`); the counts are then the pass's so far, and the pass goes on.
    public var waitEnded: String?

    public init(_ summary: DrainSummary) {
        delivered = summary.delivered
        retried = summary.retried
        dead = summary.dead
        batches = summary.batches
        inFlight = summary.inFlight
        result = summary.result
        halt = summary.halt?.description
        remaining = summary.remaining.map { Remaining(pending: $0.pending, leased: $0.leased, deadTotal: $0.dead) }
        lockHolder = summary.lockHolder?.owner
    }

    /// Reads a summary back from its JSON (`json`); other keys (the daemon's `event`) are ignored.
    public init(json object: JSONObject) throws(Malformed) {
        guard let text = object["result"]?.stringValue, let result = DrainResult(rawValue: text) else {
            throw Malformed(description: "the daemon sent a summary without a known result")
        }
        self.result = result
        delivered = try Self.integer(object, "delivered")
        retried = try Self.integer(object, "retried")
        dead = try Self.integer(object, "dead")
        batches = try Self.integer(object, "batches")
        inFlight = try Self.integer(object, "in_flight")
        halt = try Self.optionalString(object, "halt")
        lockHolder = try Self.optionalString(object, "lock_holder")
        waitEnded = try Self.optionalString(object, "wait_ended")
        if object.contains(key: "pending") {
            remaining = Remaining(
                pending: try Self.integer(object, "pending"), leased: try Self.integer(object, "leased"),
                deadTotal: try Self.integer(object, "dead_total"))
        }
    }

    /// `delivered`, `retried`, `dead`, `batches`, `in_flight` (records handed to the sink, not settled yet),
    /// `result`, `halt`, then `pending`, `leased`, `dead_total` when known, `lock_holder` when another drainer
    /// held the lock, and `wait_ended` when `drain --wait` stopped waiting before the pass ended.
    public var json: JSONObject {
        var object: JSONObject = [
            "delivered": ReportJSON.number(delivered),
            "retried": ReportJSON.number(retried),
            "dead": ReportJSON.number(dead),
            "batches": ReportJSON.number(batches),
            "in_flight": ReportJSON.number(inFlight),
            "result": .string(result.rawValue),
            "halt": halt.map(JSONValue.string) ?? .null,
        ]
        if let remaining {
            object["pending"] = ReportJSON.number(remaining.pending)
            object["leased"] = ReportJSON.number(remaining.leased)
            object["dead_total"] = ReportJSON.number(remaining.deadTotal)
        }
        if let lockHolder { object["lock_holder"] = .string(lockHolder) }
        if let waitEnded { object["wait_ended"] = .string(waitEnded) }
        return object
    }

    /// The one-line summary (with its newline); text from outside (a sink's reason, another drainer's name) is
    /// escaped, so it cannot rewrite the terminal.
    public var text: String {
        var text = "delivered \(delivered), retried \(retried), dead \(dead)"
        if let remaining {
            text += "; now pending \(remaining.pending), leased \(remaining.leased), dead \(remaining.deadTotal)"
        }
        if let halt { text += "; stopped early: " + ExternalText.escaped(halt) }
        if let lockHolder {
            text += "; not run: another drainer holds the lock (\(ExternalText.escaped(lockHolder)))"
        }
        if let waitEnded { text += "; not waiting for the rest: " + ExternalText.escaped(waitEnded) }
        return text + "\n"
    }

    private static func integer(_ object: JSONObject, _ key: String) throws(Malformed) -> Int {
        guard let value = object[key]?.numberValue?.integerValue, let integer = Int(exactly: value) else {
            throw Malformed(description: "the daemon sent a summary without a whole number for \"\(key)\"")
        }
        return integer
    }

    private static func optionalString(_ object: JSONObject, _ key: String) throws(Malformed) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw Malformed(description: "the daemon sent a summary whose \"\(key)\" is not text")
        }
    }
}
