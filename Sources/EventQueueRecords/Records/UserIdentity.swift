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

    /// The user the queue files `object` under: the Swift copy of the generated column `records.user_key`'s rule
    /// (the first string of `external_id`, `braze_id`, `user_alias`, `email`, `phone`), checked against SQLite by
    /// `UserKeyRuleTests`. `nil` when the column derives no user, and when an alias member is not a string (SQLite
    /// would turn it into text by rules of its own; such a record cannot pass Braze's checks).
    package init?(filing object: JSONObject) {
        if case .string(let id) = object["external_id"] {
            self = .externalID(id)
        } else if case .string(let id) = object["braze_id"] {
            self = .brazeID(id)
        } else if case .object(let alias) = object["user_alias"] {
            guard case .string(let name) = alias["alias_name"], case .string(let label) = alias["alias_label"] else {
                return nil
            }
            self = .alias(name: name, label: label)
        } else if case .string(let email) = object["email"] {
            self = .email(email)
        } else if case .string(let phone) = object["phone"] {
            self = .phone(phone)
        } else {
            return nil
        }
    }

    /// The string the queue files this user's records under (`records.user_key`, derived in SQL). No two
    /// identities share one: an alias label with a colon is written in hex (`user_alias#HEX:name`), so the first
    /// colon after the prefix always ends the label.
    public var orderingKey: String {
        switch self {
        case .externalID(let id): return "external_id:" + id
        case .brazeID(let id): return "braze_id:" + id
        case .alias(let name, let label):
            guard label.utf8.contains(UInt8(ascii: ":")) else { return "user_alias:" + label + ":" + name }
            return "user_alias#" + hexDigits(label.utf8, uppercase: true) + ":" + name
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

/// Bytes as two hex digits each, lower case, or upper case as SQLite's `hex()` writes them.
package func hexDigits<Bytes: Sequence<UInt8>>(_ bytes: Bytes, uppercase: Bool = false) -> String {
    let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
    var hex: [UInt8] = []
    hex.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        hex.append(digits[Int(byte >> 4)])
        hex.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: hex, as: UTF8.self)
}
