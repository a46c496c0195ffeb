/// The enqueue-time check of a record against the rules of Braze's `POST /users/track`, so the queue never holds
/// a record that can only fail at delivery, when no one is left to fix it. It runs on every enqueue: no regexes
/// or Foundation, and no allocation unless it reports an error or must serialize a large object to measure it.
///
/// "Characters" in the rules and messages means Unicode scalars ("é" as `e` plus a combining accent is two).
/// The first rule broken is reported (`ValidationError`): the user, each member in order, missing fields.
public enum RecordValidator {
    /// Checks a Braze object of the given kind; returns the one user it names. Throws the first rule broken.
    ///
    /// In an attributes object `email` and `phone` are also profile fields: `external_id`, `braze_id` or
    /// `user_alias` names the user when present, else `email`, else `phone`; the one that names the user cannot
    /// be `null`.
    public static func validate(kind: RecordKind, object: JSONObject) throws(ValidationError) -> UserIdentity {
        switch kind {
        case .event, .purchase: return try validateEventOrPurchase(kind: kind, object)
        case .attribute: return try validateAttributes(object)
        case .identify, .alias, .merge: return try validateIdentityCall(kind: kind, object).user
        }
    }
}
