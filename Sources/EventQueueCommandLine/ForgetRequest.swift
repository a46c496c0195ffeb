import EventQueue

/// `queuectl forget` as it travels over the control socket: `POST /forget?external_id=u1&braze_delete=true`, the
/// user as exactly one of `external_id`, `braze_id`, `email`, `phone`, or `alias_name` with `alias_label`,
/// percent-encoded (every byte outside `A-Z a-z 0-9 - . _ ~`). One type for both ends, so `queuectl` writes what
/// `queued` reads. Anything else (an unknown or repeated parameter, two users, a bad escape) is refused, never
/// guessed: a wrong reading would erase another user.
public struct ForgetRequest: Sendable, Hashable {
    /// The user to forget.
    public var user: UserIdentity
    /// Whether to queue Braze's `POST /users/delete` for the user.
    public var brazeDelete: Bool

    /// Why a query was refused (the daemon answers 400 with it).
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    public init(user: UserIdentity, brazeDelete: Bool) {
        self.user = user
        self.brazeDelete = brazeDelete
    }

    /// The request's query string (without the `?`).
    public var query: String {
        var pairs: [(String, String)]
        switch user {
        case .externalID(let id): pairs = [("external_id", id)]
        case .brazeID(let id): pairs = [("braze_id", id)]
        case .email(let email): pairs = [("email", email)]
        case .phone(let phone): pairs = [("phone", phone)]
        case .alias(let name, let label): pairs = [("alias_name", name), ("alias_label", label)]
        }
        pairs.append(("braze_delete", brazeDelete ? "true" : "false"))
        return pairs.map { "\($0.0)=\(Self.escaped($0.1))" }.joined(separator: "&")
    }

    /// Reads a query written by `query`.
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

    static func escaped(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            if (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || Array("-._~".utf8).contains(byte)
            {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return result
    }

    /// `nil` for a malformed escape or bytes that are not UTF-8.
    static func unescaped(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
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
