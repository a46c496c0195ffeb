/// The three kinds of object Braze's `POST /users/track` takes, one per request array.
public enum RecordKind: String, Sendable, Hashable, CaseIterable {
    /// A custom event (`events` array).
    case event
    /// Custom attributes and standard profile fields of one user (`attributes` array).
    case attribute
    /// A purchase (`purchases` array).
    case purchase

    /// The request array this kind is delivered in: `events`, `attributes` or `purchases`.
    public var brazeArray: String {
        switch self {
        case .event: return "events"
        case .attribute: return "attributes"
        case .purchase: return "purchases"
        }
    }
}
