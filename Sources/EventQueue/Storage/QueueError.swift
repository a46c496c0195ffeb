/// Everything that can go wrong when opening or using a queue file: each case carries what an operator needs to
/// act (the path, what was wrong, and in `description` what to do about it).
public enum QueueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The record broke a Braze rule; nothing was written.
    case invalidRecord(ValidationError)
    /// The file (or its directory) could not be opened or created.
    case cannotOpen(path: String, reason: String)
    /// The file exists but is not an SQLite database (or is encrypted, or its header is destroyed).
    case notAQueueFile(path: String)
    /// SQLite found the file damaged.
    case corrupt(path: String, detail: String)
    /// The file has a newer schema without compatibility levels; this binary refuses to touch it.
    case schemaTooNew(path: String, found: Int, supported: Int)
    /// A newer release migrated the file with a change that breaks this binary's `role` (its level is above
    /// this binary's); `release` is the first that implements `requiredLevel`. Nothing was written.
    case needsNewerRelease(
        path: String, role: QueueRole, fileVersion: Int, requiredLevel: Int, supportedLevel: Int, release: String?)
    /// Another process held the write lock for longer than the busy timeout.
    case busy(path: String, timeoutMilliseconds: Int)
    /// The filesystem holding the queue is full (or below the configured free-space reserve).
    case diskFull(path: String, detail: String)
    /// The queue is at its size limit (`QueueLimits`) and the record did not fit (`refuse`, or nothing older left
    /// to drop). Nothing of the transaction was written; the refusal is counted in the file.
    case queueFull(path: String, limitBytes: Int64, detail: String)
    /// The file or its directory is read-only for this process.
    case readOnly(path: String, detail: String)
    /// An idempotency key that is empty, longer than 255 bytes or holds a NUL character; nothing was written.
    case invalidIdempotencyKey(String)
    /// The idempotency key already names another record of the same user (queued, dead, or delivered within the
    /// retention): a writer's mistake, not a retry. Nothing was written; `existingID` holds the key.
    case idempotencyKeyReused(key: String, userKey: String, existingID: Int64)
    /// The path or the file is not one EventQueue may use: not a regular file with one link, or a queue file with
    /// schema objects EventQueue did not create, or that a newer migration recorded but this binary cannot
    /// tolerate. Nothing was written.
    case unsafeQueueFile(path: String, reason: String)
    /// `forget` with a Braze delete on a file older than schema 7, whose daemon (before 1.4.0) would send the
    /// erasure to `/users/track`. Nothing was written.
    case erasureNeedsNewerSchema(path: String, fileVersion: Int)
    /// `forget` with a Braze delete by a process that cannot read the erasure key (`ErasureKey`). Nothing was
    /// written.
    case erasureNotPermitted(path: String, detail: String)
    /// Any other SQLite failure, with SQLite's own message and the operation that failed.
    case sqlite(code: Int32, message: String, operation: String)

    /// What went wrong, where, and what to do about it, in one line for whoever can act on it.
    public var description: String {
        switch self {
        case .invalidRecord(let error):
            return error.description
        case .cannotOpen(let path, let reason):
            return "cannot open queue file \(path): \(reason)"
        case .notAQueueFile(let path):
            return "\(path) is not an EventQueue file (not an SQLite database); point --db at the queue file, "
                + "or move this file away: EventQueue never overwrites it"
        case .corrupt(let path, let detail):
            return "queue file \(path) is corrupt (\(detail)); run `queuectl check --db \(path)` for details, then "
                + "restore it, or copy its readable records out with `queuectl salvage \(path) NEW` (EventQueue never "
                + "overwrites or deletes it)"
        case .schemaTooNew(let path, let found, let supported):
            return "queue file \(path) has schema version \(found), newer than the \(supported) this binary "
                + "knows; upgrade EventQueue (the file was not modified)"
        case .needsNewerRelease(let path, let role, let fileVersion, let required, let supported, let release):
            let side =
                role == .writer
                ? "writers of write level \(required); this writer implements write level \(supported)"
                : "consumers of read level \(required); this consumer implements read level \(supported)"
            let upgrade =
                role == .writer
                ? "upgrade this writer (the app's EventQueue library, its C/Python writer, or queuectl)"
                : "upgrade the daemon (the eventqueue package's queued) or this queuectl"
            return "queue file \(path) has schema version \(fileVersion), which requires \(side) (EventQueue "
                + "\(EventQueueVersion.string)); \(upgrade) to EventQueue \(release ?? "a newer release") or later "
                + "(the file was not modified)"
        case .busy(let path, let timeout):
            return "queue file \(path) stayed locked by another process for more than \(timeout) ms; retry, "
                + "or raise the busy timeout"
        case .diskFull(let path, let detail):
            return "queue disk full: \(path): \(detail); free space on that filesystem or drain the queue"
        case .queueFull(let path, _, let detail):
            return "queue full: \(path): \(detail); nothing was written and the refusal is counted (queuectl "
                + "status: dropped). Deliver the queue (queuectl drain), or raise the limit or choose --when-full "
                + "drop-oldest for the daemon (queued --max-queue-bytes, docs/OPERATING.md, \"Limits\")"
        case .readOnly(let path, let detail):
            return "queue file \(path) is read-only: \(detail); check the permissions and mount of its directory"
        case .invalidIdempotencyKey(let key):
            return RecordEncodingError.invalidIdempotencyKey(key).description
        case .idempotencyKeyReused(let key, let userKey, let existingID):
            let shownKey = ValidationError.printable(String(key.prefix(40)))
            let shownUser = ValidationError.printable(String(userKey.prefix(80)))
            return "idempotency key \"\(shownKey)\" already belongs to record \(existingID) of user \(shownUser), "
                + "which is a different record; nothing was written. A key names one record of one user: use a new "
                + "key for a different record (the same record again with the same key is returned as \(existingID))"
        case .unsafeQueueFile(let path, let reason):
            return "queue file \(path) refused: \(reason) (nothing was written)"
        case .erasureNeedsNewerSchema(let path, let version):
            return "queue file \(path) has schema version \(version): a Braze delete needs schema 7 (EventQueue "
                + "\(Migrations.release(of: 7) ?? "?")), since the daemon serving an older file would send the erasure to /users/track and recreate "
                + "the user; upgrade that daemon (it migrates the file at start) or run `queuectl migrate --db "
                + "\(path)`, then forget again (nothing was written)"
        case .erasureNotPermitted(_, let detail):
            return "may not delete users at Braze: only root, the daemon's user and members of "
                + "\(ErasureKey.adminGroup) may (\(detail)); forget without --braze-delete removes the user from this "
                + "queue only (nothing was written)"
        case .sqlite(let code, let message, let operation):
            return "SQLite error \(code) during \(operation): \(message)"
        }
    }
}

extension QueueError {
    /// The writer API's spelling of why `RecordEncoder` refused a record.
    init(_ error: RecordEncodingError) {
        switch error {
        case .invalidRecord(let validation): self = .invalidRecord(validation)
        case .invalidIdempotencyKey(let key): self = .invalidIdempotencyKey(key)
        }
    }
}
