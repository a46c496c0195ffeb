/// A user's erasure at Braze (`POST /users/delete`), queued in the user's own stream by `forget` with a Braze
/// delete: what the `erasure` column of its row says (Migrations/0007_limits_and_erasure.sql).
///
/// Why a row of `records`: the claim's per-user rule then orders it among the user's records, and leases,
/// retries, dead letters, `peek` and `status` treat it as a record. Its payload is the user's identifier alone
/// (`{"external_id":"u1"}`), so its `user_key` is the user's; its kind is `attribute` (the column's CHECK).
public struct Erasure: Sendable, Hashable {
    /// Which array of `POST /users/delete` names the user: Braze takes one identifier type per request.
    public enum IdentifierType: String, Sendable, Hashable, CaseIterable {
        /// `external_ids`: users named by `external_id`.
        case externalIDs = "external_ids"
        /// `braze_ids`: users named by `braze_id`.
        case brazeIDs = "braze_ids"
        /// `user_aliases`: users named by a `user_alias` (objects with `alias_name` and `alias_label`).
        case userAliases = "user_aliases"
        /// `email_addresses`: users named by `email`.
        case emailAddresses = "email_addresses"
        /// `phone_numbers`: users named by `phone`.
        case phoneNumbers = "phone_numbers"

        /// The type that names `user` at `POST /users/delete`.
        public init(_ user: UserIdentity) {
            switch user {
            case .externalID: self = .externalIDs
            case .brazeID: self = .brazeIDs
            case .alias: self = .userAliases
            case .email: self = .emailAddresses
            case .phone: self = .phoneNumbers
            }
        }
    }

    /// The identifier type of the user to delete.
    public var type: IdentifierType
    /// Lease tokens of the user's records in flight when the forget deleted them: the deletion is sent only once
    /// no delivery under one of them is still in flight.
    public var after: [String]
    /// The latest expiry (Unix ms) of those leases: a stopped drainer elsewhere sends nothing past it
    /// (`DeliveryLease`), so the deletion waits that long, then as long as Braze may still apply a request.
    public var leasedUntilMilliseconds: Int64?

    /// The operator's authority for this row (`ErasureKey.grant`): without one that verifies, it is never sent.
    public var grant: String?

    /// An erasure of `type`, waiting for the deliveries under `after`.
    public init(
        type: IdentifierType, after: [String] = [], grant: String? = nil, leasedUntilMilliseconds: Int64? = nil
    ) {
        self.type = type
        self.after = after
        self.grant = grant
        self.leasedUntilMilliseconds = leasedUntilMilliseconds
    }

    /// The column's JSON: `{"type":"external_ids","after":["host:1:ab#7"],"grant":"9f2c..."}`.
    public var json: String {
        var object: JSONObject = ["type": .string(type.rawValue), "after": .array(after.map(JSONValue.string))]
        if let grant { object["grant"] = .string(grant) }
        if let leasedUntilMilliseconds { object["leased_until_ms"] = .number(JSONNumber(leasedUntilMilliseconds)) }
        return JSONValue.object(object).serialized
    }

    /// Reads the column (another user's input, like every value in the file): `nil` when it is not an object with a
    /// known `type` and an `after` array of strings (a missing `after` is an empty one).
    public init?(json text: String) {
        guard let object = try? JSONValue.parse(text).objectValue,
            let name = object["type"]?.stringValue, let type = IdentifierType(rawValue: name)
        else { return nil }
        var after: [String] = []
        switch object["after"] {
        case nil, .null?: break
        case .array(let tokens)?:
            after = tokens.compactMap(\.stringValue)
            guard after.count == tokens.count else { return nil }
        default: return nil
        }
        self.init(
            type: type, after: after, grant: object["grant"]?.stringValue,
            leasedUntilMilliseconds: object["leased_until_ms"]?.numberValue?.integerValue)
    }

    /// The payload an erasure row stores for `user`: the identifier alone, so that its `user_key` is the user's.
    public static func payload(for user: UserIdentity) -> String {
        JSONObject(members: [user.brazeMember]).serialized
    }

    /// The user an erasure row erases (`UserIdentity.init(filing:)`), when the payload holds that identifier alone
    /// and of type `type`; otherwise why not (such a row is dead-lettered, never sent).
    public func user(payload: String) -> Result<UserIdentity, ErasureProblem> {
        guard let object = try? JSONValue.parse(payload).objectValue else {
            return .failure(ErasureProblem(description: "its payload is not a JSON object"))
        }
        guard let user = UserIdentity(filing: object), object.count == 1 else {
            return .failure(
                ErasureProblem(
                    description: "its payload must be one identifier member alone (external_id, braze_id, user_alias, "
                        + "email or phone)"))
        }
        let found = IdentifierType(user)
        do {
            try RecordValidator.checkUser(user)
        } catch {
            return .failure(ErasureProblem(description: "its payload's identifier is invalid: \(error)"))
        }
        guard found == type else {
            return .failure(
                ErasureProblem(
                    description: "it names \(type.rawValue) but its payload names the user by \(found.rawValue)"))
        }
        return .success(user)
    }
}

/// Why an erasure row cannot be sent: the reason it is dead-lettered with.
public struct ErasureProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The reason, in words.
    public var description: String

    /// A problem described by `description`.
    public init(description: String) {
        self.description = description
    }
}

extension Erasure {
    /// How the reason of an erasure dead-lettered for a grant that does not verify begins (`status` counts them).
    public static let unauthorized = "not authorized"

    /// Why a row whose `erasure` column cannot be read is dead-lettered at claim: it is never sent anywhere (sending
    /// it to `/users/track` would recreate the user it was meant to erase).
    static let unreadableColumnReason =
        "its erasure column is not an object with a known type (external_ids, braze_ids, "
        + "user_aliases, email_addresses, phone_numbers) and an array of lease tokens (written by a foreign writer)"
}
