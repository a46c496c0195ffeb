/// The one check of a user to erase (`forget`): the identifier rules a record's user meets at enqueue.
extension RecordValidator {
    /// Checks `user`'s identifier as `enqueue` checks the member that names a record's user (non-empty, at most 255
    /// characters, no control characters; an e-mail address or phone number shaped as one), so that a deletion the
    /// queue keeps is one Braze can take: an erasure is dead-lettered at delivery otherwise.
    package static func checkUser(_ user: UserIdentity) throws(ValidationError) {
        _ = try identity(user.brazeMember)
    }
}
