/// The identity calls (`identify`, `alias`, `merge`): a row names the user it is filed under (its own identifier
/// member) and the other one, under the member named after the kind (`records.other_user_key`):
///
///     {"external_id":"U1","identify":{"user_alias":{"alias_name":"dev-1","alias_label":"device_id"}}}
///     {"external_id":"U1","alias":{"user_alias":{"alias_name":"crm-7","alias_label":"crm"}}}
///     {"external_id":"kept","merge":{"email":"old@example.com"}}
extension RecordValidator {
    /// Checks an identity call; returns the user it is filed under and the other one. Nothing but the two
    /// identities may be in it.
    public static func validateIdentityCall(
        kind: RecordKind, _ object: JSONObject
    ) throws(ValidationError) -> (user: UserIdentity, other: UserIdentity) {
        let side = kind.rawValue
        var user: UserIdentity?
        var otherObject: JSONObject?
        for member in object.members {
            if member.key == side {
                guard case .object(let inner) = member.value else {
                    throw ValidationError(field: side, rule: "must be an object naming one user")
                }
                otherObject = inner
            } else if Key(member.key).isIdentifier {
                guard user == nil else {
                    throw moreThanOneUser(object.members.lazy.map(\.key).filter { Key($0).isIdentifier })
                }
                user = try identity(member)
            } else {
                throw ValidationError(field: member.key, rule: "is not a field of \(kind.rawValue)")
            }
        }
        guard let user else { throw noUser }
        guard let otherObject else {
            throw ValidationError(field: side, rule: "is required: the user to \(kind.rawValue)")
        }
        let other: UserIdentity
        do throws(ValidationError) {
            other = try soleUser(of: otherObject)
            if let extra = otherObject.members.first(where: { !Key($0.key).isIdentifier }) {
                throw ValidationError(field: extra.key, rule: "is not a field of an identifier")
            }
        } catch {
            throw ValidationError(field: side + "." + error.field, rule: error.rule)
        }
        try check(kind: kind, user: user, other: other)
        return (user, other)
    }

    /// What Braze takes: identify and alias/new name the external id the other identity joins, identify an alias,
    /// email or phone, alias/new an alias; merge any of external id, alias, email or phone on each side (Braze
    /// merges no `braze_id`), two different users.
    private static func check(kind: RecordKind, user: UserIdentity, other: UserIdentity) throws(ValidationError) {
        func name(_ identity: UserIdentity) -> String { identity.brazeMember.key }
        switch (kind, user, other) {
        case (.identify, .externalID, .alias), (.identify, .externalID, .email), (.identify, .externalID, .phone),
            (.alias, .externalID, .alias):
            return
        case (.identify, .externalID, _):
            throw ValidationError(
                field: "identify", rule: "must name a user_alias, email or phone (got \(name(other)))")
        case (.alias, .externalID, _):
            throw ValidationError(field: "alias", rule: "must name a user_alias (got \(name(other)))")
        case (.identify, _, _), (.alias, _, _):
            throw ValidationError(field: name(user), rule: "cannot be \(kind.rawValue)'d: give external_id")
        case (.merge, .brazeID, _):
            throw ValidationError(
                field: "braze_id", rule: "cannot be merged: give external_id, user_alias, email or phone")
        case (.merge, _, .brazeID):
            throw ValidationError(
                field: "merge.braze_id", rule: "cannot be merged: give external_id, user_alias, email or phone")
        case (.merge, _, _):
            guard user != other else {
                throw ValidationError(field: "merge", rule: "merges the user into itself (\(user.orderingKey))")
            }
        default:
            throw ValidationError(field: "type", rule: "\(kind.rawValue) is not an identity call")
        }
    }
}

extension Record {
    /// `POST /users/identify`: the unidentified profile of `other` (an alias, email or phone) becomes `externalID`'s
    /// (the device-login case: events recorded under a device alias before the user logged in).
    public static func identify(externalID: String, _ other: UserIdentity, idempotencyKey: String? = nil) -> Record {
        identityCall(.identify, .externalID(externalID), other, idempotencyKey)
    }

    /// `POST /users/alias/new`: `alias` is added to `externalID`'s profile.
    public static func alias(externalID: String, name: String, label: String, idempotencyKey: String? = nil) -> Record {
        identityCall(.alias, .externalID(externalID), .alias(name: name, label: label), idempotencyKey)
    }

    /// `POST /users/merge`: `merged`'s profile is merged into `kept`'s, which is kept.
    public static func merge(_ merged: UserIdentity, into kept: UserIdentity, idempotencyKey: String? = nil) -> Record {
        identityCall(.merge, kept, merged, idempotencyKey)
    }

    private static func identityCall(
        _ kind: RecordKind, _ user: UserIdentity, _ other: UserIdentity, _ idempotencyKey: String?
    ) -> Record {
        var object = JSONObject(members: [user.brazeMember])
        object[kind.rawValue] = .object(JSONObject(members: [other.brazeMember]))
        return Record(kind: kind, object: object, idempotencyKey: idempotencyKey)
    }
}

extension UserIdentity {
    /// The other user an identity call names (the rule of the column `records.other_user_key`); `nil` for every
    /// other kind.
    package init?(filingOther object: JSONObject, kind: RecordKind) {
        guard kind.isIdentityCall, case .object(let other)? = object[kind.rawValue] else { return nil }
        self.init(filing: other)
    }
}
