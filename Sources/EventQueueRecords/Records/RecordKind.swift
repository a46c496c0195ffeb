/// What a queued row asks of Braze: one of the three objects of `POST /users/track` (one per request array), or one
/// of the identity calls that change who a user is (Migrations/0008).
public enum RecordKind: String, Sendable, Hashable, CaseIterable {
    /// A custom event (`events` array).
    case event
    /// Custom attributes and standard profile fields of one user (`attributes` array).
    case attribute
    /// A purchase (`purchases` array).
    case purchase
    /// `POST /users/identify`: the unidentified profile named under `identify` (an alias, email or phone) is merged
    /// into the external id the row names.
    case identify
    /// `POST /users/alias/new`: the alias named under `alias` is added to the external id the row names.
    case alias
    /// `POST /users/merge`: the profile named under `merge` is merged into the one the row names, which is kept.
    case merge

    /// The request array this kind is delivered in: `events`, `attributes` or `purchases`; for an identity call,
    /// its endpoint's array (`aliases_to_identify` for every identify: `BrazeSink` picks the array by the identity).
    public var brazeArray: String {
        switch self {
        case .event: return "events"
        case .attribute: return "attributes"
        case .purchase: return "purchases"
        case .identify: return "aliases_to_identify"
        case .alias: return "user_aliases"
        case .merge: return "merge_updates"
        }
    }

    /// An identity call: a row in the streams of both identities it names (`records.user_key` and
    /// `records.other_user_key`), sent to its own endpoint, never to `/users/track`.
    public var isIdentityCall: Bool {
        switch self {
        case .event, .attribute, .purchase: return false
        case .identify, .alias, .merge: return true
        }
    }
}
