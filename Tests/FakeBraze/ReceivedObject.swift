/// One object Braze received in a request it answered 2xx, in arrival order.
public struct ReceivedObject: Sendable, Hashable {
    /// `attributes`, `events` or `purchases`.
    public var array: String
    /// The object as compact JSON with sorted keys (re-serialized by `JSONSerialization`).
    public var json: String
    /// The 1-based number of the `/users/track` request that carried it.
    public var request: Int
    /// Its position in that request's array (what Braze's `errors` entries name).
    public var index: Int
    /// False when the object was named in the response's `errors` (refused).
    public var accepted: Bool
}
