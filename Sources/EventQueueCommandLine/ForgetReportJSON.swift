import EventQueue
import EventQueueDelivery

/// The one shape of a forget's report: `queuectl forget --json` (local), the daemon's answer to `POST /forget`, and
/// `queuectl forget` reading that answer back, so the local and the remote output have the same keys and text.
public enum ForgetReportJSON {
    /// Who forgot: the daemon serving the queue, or the `queuectl` process itself.
    public enum Forgetter: String, Sendable {
        case daemon, local
    }

    /// `user` (the identifier member, as in a record), `removed` with `pending`, `leased`, `dead`,
    /// `remembered_keys`, then `erasures_kept`, `erasure_id` (null without a Braze delete), `waits_for` (lease
    /// tokens), `scrub` (`vacuumed`, `wal_truncated`, `db_bytes`, `seconds`), `bytes_gone`, and `by` (`daemon` or
    /// `local`).
    public static func json(_ report: ForgetReport, by forgetter: Forgetter) -> JSONObject {
        [
            "user": .object(JSONObject(members: [report.user.brazeMember])),
            "removed": ReportJSON.number(report.removed),
            "pending": ReportJSON.number(report.pending),
            "leased": ReportJSON.number(report.leased),
            "dead": ReportJSON.number(report.dead),
            "remembered_keys": ReportJSON.number(report.rememberedKeys),
            "erasures_kept": ReportJSON.number(report.erasuresKept),
            "erasure_id": report.erasureID.map { ReportJSON.number($0) } ?? .null,
            "waits_for": .array(report.waitsFor.map(JSONValue.string)),
            "scrub": [
                "vacuumed": .bool(report.scrub.vacuumed),
                "wal_truncated": .bool(report.scrub.walTruncated),
                "db_bytes": ReportJSON.number(report.scrub.databaseBytes),
                "seconds": JSONNumber(Double(report.scrub.nanoseconds) / 1e9).map(JSONValue.number) ?? .null,
            ],
            "bytes_gone": .bool(report.scrub.bytesGone),
            "by": .string(forgetter.rawValue),
        ]
    }

    /// Why an answer could not be read back (a daemon of another version, a damaged answer).
    public struct Malformed: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Reads a report back from `json`.
    public static func report(_ object: JSONObject) throws(Malformed) -> ForgetReport {
        guard let member = object["user"]?.objectValue, let user = UserIdentity.fromMember(member) else {
            throw Malformed(description: "the daemon's answer names no user")
        }
        var report = ForgetReport(user: user)
        report.pending = try integer(object, "pending")
        report.leased = try integer(object, "leased")
        report.dead = try integer(object, "dead")
        report.rememberedKeys = try integer(object, "remembered_keys")
        report.erasuresKept = try integer(object, "erasures_kept")
        report.erasureID = object["erasure_id"]?.numberValue?.integerValue
        report.waitsFor = object["waits_for"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let scrub = object["scrub"]?.objectValue ?? [:]
        let seconds = scrub["seconds"]?.numberValue.flatMap { Double($0.text) } ?? 0
        report.scrub = ScrubReport(
            vacuumed: scrub["vacuumed"] == .bool(true), walTruncated: scrub["wal_truncated"] == .bool(true),
            databaseBytes: scrub["db_bytes"]?.numberValue?.integerValue ?? 0,
            nanoseconds: UInt64(max(0, min(seconds, 1e9)) * 1e9))
        return report
    }

    /// What was removed and what became of the bytes, a line each (escaped: the user is outside input). Forgotten
    /// locally, a Braze delete leaves at the next drain; the daemon launches one at once.
    public static func text(_ report: ForgetReport, by forgetter: Forgetter) -> String {
        let user = ExternalText.escaped(report.user.orderingKey)
        var lines = [
            (forgetter == .daemon ? "the daemon forgot " : "forgot ")
                + "\(user): removed \(report.pending) pending, \(report.leased) in flight, \(report.dead) dead; "
                + "forgot \(report.rememberedKeys) remembered keys"
        ]
        if report.erasuresKept > 0 {
            lines.append(
                "kept \(report.erasuresKept) erasure(s) of an earlier forget (deletions Braze has not confirmed)")
        }
        if let id = report.erasureID {
            lines.append(
                "queued erasure \(id): Braze's /users/delete for this user, sent after every request that carried a "
                    + "record of theirs"
                    + (report.waitsFor.isEmpty ? "" : " (\(report.waitsFor.count) still in flight)")
                    + (forgetter == .daemon ? "" : "; it leaves at the next drain"))
        }
        let seconds = twoDecimals(Double(report.scrub.nanoseconds) / 1e9)
        if report.scrub.bytesGone {
            lines.append(
                "scrubbed in \(seconds) s: the file was rebuilt (\(report.scrub.databaseBytes) bytes) and its WAL emptied; "
                    + "no byte of the removed records is left in either")
        } else if report.scrub.vacuumed {
            lines.append("the file was rebuilt, but readers kept its WAL from being emptied: old pages remain there")
        } else {
            lines.append("the file was busy: the removed records' bytes were not scrubbed yet")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func integer(_ object: JSONObject, _ key: String) throws(Malformed) -> Int {
        guard let value = object[key]?.numberValue?.integerValue, let integer = Int(exactly: value) else {
            throw Malformed(description: "the daemon's answer has no whole number for \"\(key)\"")
        }
        return integer
    }
}

extension UserIdentity {
    /// The user an identifier member names (`{"external_id":"u1"}`), by the filing rule; `nil` for anything else.
    static func fromMember(_ member: JSONObject) -> UserIdentity? {
        guard member.count == 1 else { return nil }
        switch member.members.first?.key {
        case "external_id": return member["external_id"]?.stringValue.map(UserIdentity.externalID)
        case "braze_id": return member["braze_id"]?.stringValue.map(UserIdentity.brazeID)
        case "email": return member["email"]?.stringValue.map(UserIdentity.email)
        case "phone": return member["phone"]?.stringValue.map(UserIdentity.phone)
        case "user_alias":
            guard let alias = member["user_alias"]?.objectValue, let name = alias["alias_name"]?.stringValue,
                let label = alias["alias_label"]?.stringValue
            else { return nil }
            return .alias(name: name, label: label)
        default: return nil
        }
    }
}

extension ForgetReportJSON {
    /// `value` with two decimals.
    static func twoDecimals(_ value: Double) -> String {
        let hundredths = Int((max(0, min(value, 1e12)) * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }
}
