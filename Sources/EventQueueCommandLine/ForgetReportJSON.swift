import EventQueue
import EventQueueDelivery

/// The one shape of a forget's report: `queuectl forget --json` and the daemon's answer to `POST /forget`, the same
/// keys and text either way.
public enum ForgetReportJSON {
    /// Who forgot: the daemon serving the queue (`POST /forget`), or the `queuectl` process itself.
    public enum Forgetter: String, Sendable {
        case daemon, local
    }

    /// `user` (the identifier member, as in a record; null for several users), `users` (how many), `removed` with
    /// `pending`, `leased`, `dead`, `remembered_keys`, then `erasures_kept`, `erasure_id` (null without a Braze
    /// delete or for several users), `erasure_ids`, `waits_for` (lease tokens), `scrub` (`vacuumed`,
    /// `wal_truncated`, `db_bytes`, `seconds`), `bytes_gone`, and `by` (`daemon` or `local`).
    public static func json(_ report: ForgetReport, by forgetter: Forgetter) -> JSONObject {
        let one = report.users.count == 1
        return [
            "user": one ? .object(JSONObject(members: [report.users[0].brazeMember])) : .null,
            "users": ReportJSON.number(report.users.count),
            "removed": ReportJSON.number(report.removed),
            "pending": ReportJSON.number(report.pending),
            "leased": ReportJSON.number(report.leased),
            "dead": ReportJSON.number(report.dead),
            "remembered_keys": ReportJSON.number(report.rememberedKeys),
            "erasures_kept": ReportJSON.number(report.erasuresKept),
            "erasure_id": one ? report.erasureIDs.first.map { ReportJSON.number($0) } ?? .null : .null,
            "erasure_ids": .array(report.erasureIDs.map { ReportJSON.number($0) }),
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

    /// What was removed and what became of the bytes, a line each (escaped: the user is outside input). A Braze
    /// delete leaves at once when a daemon serving the queue accepted a launch, else at the next pass.
    public static func text(_ report: ForgetReport, launched: Bool) -> String {
        let users =
            report.users.count == 1
            ? ExternalText.escaped(report.users[0].orderingKey) : "\(report.users.count) users"
        var lines = [
            "forgot \(users): removed \(report.pending) pending, \(report.leased) in flight, \(report.dead) dead; "
                + "forgot \(report.rememberedKeys) remembered keys"
        ]
        if report.erasuresKept > 0 {
            lines.append(
                "kept \(report.erasuresKept) erasure(s) of an earlier forget (deletions Braze has not confirmed)")
        }
        if !report.erasureIDs.isEmpty {
            lines.append(
                "queued erasure \(report.erasureIDs.map(String.init).joined(separator: ", ")): Braze's /users/delete "
                    + "for \(report.users.count == 1 ? "this user" : "these users"), sent after every request that "
                    + "carried a record of theirs"
                    + (report.waitsFor.isEmpty ? "" : " (\(report.waitsFor.count) still in flight)")
                    + (launched ? "" : "; it leaves at the next drain"))
        }
        let seconds = twoDecimals(Double(report.scrub.nanoseconds) / 1e9)
        if report.scrub.bytesGone {
            lines.append(
                "scrubbed in \(seconds) s: the file was rebuilt (\(report.scrub.databaseBytes) bytes) and its WAL emptied; "
                    + "no byte of the removed records is left in either")
        } else if report.scrub.vacuumed {
            lines.append("the file was rebuilt, but readers kept its WAL from being emptied: old pages remain there")
        } else {
            lines.append(
                "scrub owed: the file (\(report.scrub.databaseBytes) bytes) could not be rebuilt within a quarter of "
                    + "the busy timeout, or was busy: the removed records' bytes are not gone yet; the upkeep "
                    + "rebuilds it once it fits (status shows the scrub owed)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `value` with two decimals.
    static func twoDecimals(_ value: Double) -> String {
        let hundredths = Int((max(0, min(value, 1e12)) * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }
}
