/// The enqueue-time check of a record against the rules of Braze's `POST /users/track`.
///
/// A record that passes is one Braze will take as it is, so the queue never holds a record that can only fail at
/// delivery, when no one is left to fix it. The check runs on every enqueue, so it walks the object's bytes and
/// members without regexes or Foundation, and allocates nothing of its own unless it has an error to report (or a
/// `properties` object or nested attribute large enough that it has to be serialized to be measured).
///
/// Lengths are counted in Unicode scalars (`String.unicodeScalars.count`), not in Swift `Character`s: an emoji
/// such as "👍" is one, "é" written as `e` plus a combining acute accent is two, and a family emoji joined with
/// zero-width joiners is five. "Characters" in the rules and in error messages means Unicode scalars.
///
/// Errors name the field as a dotted path into the Braze object (`properties.song`, `user_alias.alias_name`,
/// `favorite_colors[3]`), or `record` for the object as a whole, and phrase the rule to read after it:
/// `name` "must be 1 to 255 characters (got 0)". The first rule broken is reported, in this order: the user the
/// record names, then each member in the order written, then the required fields that are missing.
///
/// The rules are spread over one file per concern: the user (`+Identity`), events and purchases
/// (`+EventsAndPurchases`), attributes and standard profile fields (`+Attributes`), `properties`, nested values
/// and the one rule for names a writer chooses (`+Properties`), the limits (`+Limits`), the member names the
/// rules know (`+Key`), and control characters and how values are shown in error messages (`+Messages`).
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
