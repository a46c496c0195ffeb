/// The one user a record is about, in any of the ways Braze can name a user.
///
/// The identity is also the unit of ordering: records of the same user are delivered in the order they were
/// enqueued, even across retries, while records of different users never wait on each other.
public enum UserIdentity: Sendable, Hashable {
    /// Your own user id (`external_id`): the usual choice, stable across devices.
    case externalID(String)
    /// Braze's own id for a profile (`braze_id`).
    case brazeID(String)
    /// A user alias (`user_alias`: `alias_name` and `alias_label`), for users without an external id yet.
    case alias(name: String, label: String)
    /// An email address (`email`): Braze finds or creates the profile by it.
    case email(String)
    /// A phone number (`phone`, E.164 recommended).
    case phone(String)

    /// The string the queue orders this user's records by: the value of `records.user_key`.
    ///
    /// The queue file derives `user_key` itself, in SQL, from the stored payload (see `Migrations/0001_init.sql`),
    /// so that every writer, foreign ones included, gets the same ordering; no writer stores this string. This is
    /// the same derivation in Swift, for readers of `ClaimedRecord.userKey`; the two must stay identical (the fuzz
    /// oracle checks that they are).
    public var orderingKey: String {
        switch self {
        case .externalID(let id): return "external_id:" + id
        case .brazeID(let id): return "braze_id:" + id
        case .alias(let name, let label): return "user_alias:" + label + ":" + name
        case .email(let email): return "email:" + email
        case .phone(let phone): return "phone:" + phone
        }
    }

    /// The identifier member(s) as they appear in a Braze object.
    public var brazeMember: JSONObject.Member {
        switch self {
        case .externalID(let id): return .init(key: "external_id", value: .string(id))
        case .brazeID(let id): return .init(key: "braze_id", value: .string(id))
        case .alias(let name, let label):
            return .init(key: "user_alias", value: ["alias_name": .string(name), "alias_label": .string(label)])
        case .email(let email): return .init(key: "email", value: .string(email))
        case .phone(let phone): return .init(key: "phone", value: .string(phone))
        }
    }
}
