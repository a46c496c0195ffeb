/// The enqueue-time check of a record against the rules of Braze's `POST /users/track`.
///
/// A record that passes is one Braze will take, so the queue never holds a record that can only fail at delivery,
/// when no one is left to fix it. It runs on every enqueue: no regexes or Foundation, and no allocation unless it
/// reports an error (or must serialize a large `properties` object or nested attribute to measure it).
///
/// Lengths are counted in Unicode scalars, not `Character`s ("é" as `e` plus a combining accent is two):
/// "characters" in the rules and messages means Unicode scalars.
///
/// Errors name the field as a dotted path (`properties.song`, `user_alias.alias_name`, `favorite_colors[3]`), or
/// `record`, with the rule phrased to read after it: `name` "must be 1 to 255 characters (got 0)". The first
/// rule broken is reported: the user, then each member in order, then missing required fields.
public enum RecordValidator {
    /// Checks a Braze object of the given kind; returns the one user it names. Throws the first rule broken.
    ///
    /// - Events and purchases name exactly one user with `external_id`, `braze_id`, `user_alias`, `email` or
    ///   `phone`.
    /// - In an attributes object `email` and `phone` are also profile fields: when `external_id`, `braze_id` or
    ///   `user_alias` is present it names the user and `email`/`phone` are values to set (or `null` to unset);
    ///   otherwise `email` names the user (and `phone` is a value to set), or else `phone` does.
    ///   An `email` or `phone` that names the user must be a string: `null` (unset) is only accepted when another
    ///   identifier names the user.
    public static func validate(kind: RecordKind, object: JSONObject) throws(ValidationError) -> UserIdentity {
        switch kind {
        case .event, .purchase: return try validateEventOrPurchase(kind: kind, object)
        case .attribute: return try validateAttributes(object)
        case .identify, .alias, .merge: return try validateIdentityCall(kind: kind, object).user
        }
    }
}
