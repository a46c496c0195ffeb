import EventQueue

/// The daemon's `POST /forget?external_id=u1&braze_delete=true` (1.4.0's `queuectl forget` sent it; scripts may):
/// the user as exactly one of `external_id`, `braze_id`, `email`, `phone`, or `alias_name` with `alias_label`,
/// percent-encoded. Anything else (an unknown or repeated parameter, two users, a bad escape) is refused, never
/// guessed: a wrong reading would erase another user.
public struct ForgetRequest: Sendable, Hashable {
    public var user: UserIdentity
    /// Whether to queue Braze's `POST /users/delete` for the user.
    public var brazeDelete: Bool

    /// Why a query was refused (the daemon answers 400 with it).
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Reads a query: `external_id=u1&braze_delete=true`.
    public init(parsing query: String) throws(Invalid) {
        var values: [String: String] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard Self.names.contains(name) else {
                throw Invalid(description: "unknown parameter \"\(Self.shown(name))\" for POST /forget")
            }
            guard values[name] == nil else { throw Invalid(description: "\(name) given twice") }
            guard parts.count == 2, let value = Self.unescaped(String(parts[1])) else {
                throw Invalid(description: "\(name) has no value, or an invalid percent-escape")
            }
            values[name] = value
        }
        switch values["braze_delete"] {
        case nil, "false", "0": brazeDelete = false
        case "true", "1": brazeDelete = true
        default: throw Invalid(description: "braze_delete must be true or false")
        }
        var users: [UserIdentity] = []
        if let id = values["external_id"] { users.append(.externalID(id)) }
        if let id = values["braze_id"] { users.append(.brazeID(id)) }
        if let email = values["email"] { users.append(.email(email)) }
        if let phone = values["phone"] { users.append(.phone(phone)) }
        switch (values["alias_name"], values["alias_label"]) {
        case (let name?, let label?): users.append(.alias(name: name, label: label))
        case (nil, nil): break
        default: throw Invalid(description: "alias_name and alias_label go together")
        }
        guard users.count == 1, let user = users.first else {
            throw Invalid(description: "name exactly one user (got \(users.count))")
        }
        self.user = user
    }

    static let names: Set<String> = [
        "external_id", "braze_id", "email", "phone", "alias_name", "alias_label", "braze_delete",
    ]

    /// `nil` for a malformed escape or bytes that are not UTF-8.
    static func unescaped(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            // Both must be hex digits: `UInt8(_:radix:)` alone would take "+f" as a signed number.
            guard let high = iterator.next(), let low = iterator.next(),
                Character(UnicodeScalar(high)).isHexDigit, Character(UnicodeScalar(low)).isHexDigit,
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func shown(_ text: String) -> String {
        String(text.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) ? $0 : "?" })
    }
}
