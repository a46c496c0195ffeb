/// A stored record as an operator sees it (`peek`, `dead list`): any state, with its delivery history. Read without
/// a lease, unlike a `ClaimedRecord`, so nothing about it is promised to stay true.
public struct QueuedRecord: Sendable, Hashable {
    /// Where a record is in its life: waiting, in flight under a lease, or a dead letter.
    public enum State: String, Sendable, Hashable {
        case pending, leased, dead
    }

    /// The record's id.
    public var id: Int64
    /// Which Braze array the record goes into.
    public var kind: RecordKind
    /// Its state when it was read.
    public var state: State
    /// The stored Braze object as JSON text.
    public var payload: String
    /// Failed delivery attempts so far.
    public var attempts: Int
    /// When it was enqueued (Unix ms).
    public var createdAtMilliseconds: Int64
    /// When a pending record may next be claimed (Unix ms; 0: at once).
    public var nextAttemptAtMilliseconds: Int64
    /// Why the last attempt failed, or why the record is dead.
    public var lastError: String?
    /// When it became a dead letter (Unix ms); `nil` unless `state` is `dead`.
    public var deadAtMilliseconds: Int64?
    /// Set when the row is a user's erasure: `payload` is the user's identifier, sent as `POST /users/delete`.
    public var erasure: Erasure? = nil
}
