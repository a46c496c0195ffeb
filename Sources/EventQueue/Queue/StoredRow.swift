/// The ranges a value read from the queue file must lie in before any code computes with it.
///
/// Why: every writer in the group can write the file around the library's checks and (with
/// `ignore_check_constraints`) the table's own; a stored `attempts` of 2^63-1 would trap `attempts + 1`. So a
/// row out of range is dead-lettered with the reason instead of delivered.
public enum StoredRow {
    /// Failed attempts: far above any `--max-attempts` in use, far below anything arithmetic could overflow.
    public static let attemptsRange: ClosedRange<Int64> = 0...1_000_000
    /// Unix milliseconds from 1970 to the end of year 9999: what Braze's ISO 8601 `time` can say.
    public static let timeRange: ClosedRange<Int64> = 0...253_402_300_799_999
    /// Ids are AUTOINCREMENT from 1; the top of the range is kept free so that an id never reaches the
    /// largest one (where AUTOINCREMENT gives up with SQLITE_FULL, and `id + 1` traps).
    public static let idRange: ClosedRange<Int64> = 1...(Int64(1) << 62)
    /// The largest payload a record can have (`RecordEncoder.maximumPayloadBytes`): a larger stored one was written
    /// around the library, and is never read (`QueueConsumer.refuseOversized`).
    public static let maximumPayloadBytes = RecordEncoder.maximumPayloadBytes

    /// Why a claimed row cannot be delivered, or `nil`; `payload` and `kind` are raw (`nil`: NULL or not UTF-8).
    static func problem(id: Int64, kind: String?, payload: String?, createdAt: Int64, attempts: Int64) -> String? {
        guard idRange.contains(id) else {
            return "stored id \(id) is out of range \(idRange.lowerBound)...\(idRange.upperBound)"
        }
        guard let kind, RecordKind(rawValue: kind) != nil else {
            return
                "stored kind \(kind.map { "\"\(ValidationError.printable(String($0.prefix(40))))\"" } ?? "(not UTF-8)") "
                + "is not event, attribute or purchase"
        }
        guard payload != nil else {
            return "payload is not valid UTF-8 (written by a foreign writer); it is never changed, so it is not sent"
        }
        guard attemptsRange.contains(attempts) else {
            return
                "stored attempts \(attempts) is out of range \(attemptsRange.lowerBound)...\(attemptsRange.upperBound)"
        }
        guard timeRange.contains(createdAt) else {
            return "stored created_at_ms \(createdAt) is out of range (1970 to 9999)"
        }
        return nil
    }
}
