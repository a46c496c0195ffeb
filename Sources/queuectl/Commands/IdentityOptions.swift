import ArgumentParser
import EventQueue

/// `--external-id`, `--braze-id`, `--email`, `--phone`, or an alias (`--alias-name` with `--alias-label`, or
/// `--alias NAME:LABEL`): exactly one.
///
/// Why `--alias` refuses a second colon: `urn:x:1:crm` splits as well at any of its colons, and a wrong split
/// sends the record to another Braze user. With exactly one colon there is one reading; anything else must be
/// spelled with the two separate options, which hold any text.
struct IdentityOptions: ParsableArguments {
    // Each flag collects every value given, so that a repeated flag is refused (`singleValue`'s why).
    @Option(name: .customLong("external-id"), parsing: .singleValue, help: "The user's external id.")
    var externalID: [String] = []
    @Option(name: .customLong("braze-id"), parsing: .singleValue, help: "The user's Braze id.")
    var brazeID: [String] = []
    @Option(parsing: .singleValue, help: "The user's email (as the identifier).")
    var email: [String] = []
    @Option(parsing: .singleValue, help: "The user's phone number (as the identifier).")
    var phone: [String] = []
    @Option(
        parsing: .singleValue,
        help: """
            A user alias as NAME:LABEL, with exactly one colon (a name or label holding a colon: use \
            --alias-name and --alias-label).
            """)
    var alias: [String] = []
    @Option(
        name: .customLong("alias-name"), parsing: .singleValue,
        help: "A user alias's name (with --alias-label); any text.")
    var aliasName: [String] = []
    @Option(
        name: .customLong("alias-label"), parsing: .singleValue,
        help: "A user alias's label (with --alias-name); any text.")
    var aliasLabel: [String] = []

    /// The one user named.
    func identity() throws -> UserIdentity {
        guard let user = try identityIfGiven() else {
            throw ValidationError(
                "name exactly one user with --external-id, --braze-id, --email, --phone or --alias (got none)")
        }
        return user
    }

    /// The one user named, or `nil` for none. Two identity flags, of one kind or of two, are a usage error naming
    /// both: which one was meant cannot be known, and guessing files the record under (or erases) another user.
    func identityIfGiven() throws -> UserIdentity? {
        try Self.oneUser(
            externalID: externalID, brazeID: brazeID, email: email, phone: phone, alias: alias, aliasName: aliasName,
            aliasLabel: aliasLabel)
    }

    /// `identityIfGiven`'s rule for flags spelled `prefix`NAME (`merge` names two users: `--merge-*`, `--keep-*`).
    static func oneUser(
        prefix: String = "--", externalID: [String] = [], brazeID: [String] = [], email: [String], phone: [String],
        alias: [String], aliasName: [String], aliasLabel: [String]
    ) throws -> UserIdentity? {
        let (nameFlag, labelFlag) = (prefix + "alias-name", prefix + "alias-label")
        let pairedAlias = aliasName.count == 1 && aliasLabel.count == 1
        let flags =
            [("external-id", externalID), ("braze-id", brazeID), ("email", email), ("phone", phone), ("alias", alias)]
            + (pairedAlias ? [] : [("alias-name", aliasName), ("alias-label", aliasLabel)])
        // The names are spelled out only for the error: this runs on every `queuectl enqueue`.
        if flags.reduce(pairedAlias ? 1 : 0, { $0 + $1.1.count }) > 1 {
            let named =
                flags.flatMap { flag, values in values.map { "\(prefix + flag) \(quoted($0))" } }
                + (pairedAlias ? ["\(nameFlag) \(quoted(aliasName[0])) \(labelFlag) \(quoted(aliasLabel[0]))"] : [])
            let choices = ["external-id", "braze-id", "email", "phone", "alias"].filter {
                $0 != "braze-id" || prefix == "--"
            }
            throw ValidationError(
                "two users named: \(named[0]) and \(named[1])\(named.count > 2 ? " (and \(named.count - 2) more)" : ""); "
                    + "name exactly one user with one of \(choices.map { prefix + $0 }.joined(separator: ", ")) "
                    + "(nothing was changed)")
        }
        if let externalID = externalID.first { return .externalID(externalID) }
        if let brazeID = brazeID.first { return .brazeID(brazeID) }
        if let email = email.first { return .email(email) }
        if let phone = phone.first { return .phone(phone) }
        if let alias = alias.first { return try Self.splitAlias(alias, flag: prefix + "alias") }
        if pairedAlias { return .alias(name: aliasName[0], label: aliasLabel[0]) }
        if !aliasName.isEmpty || !aliasLabel.isEmpty {
            throw ValidationError("\(nameFlag) and \(labelFlag) go together: give both")
        }
        return nil
    }

    /// `NAME:LABEL` with exactly one colon, neither side empty; anything else is refused, never guessed.
    static func splitAlias(_ alias: String, flag: String = "--alias") throws -> UserIdentity {
        guard let colon = alias.firstIndex(of: ":"), colon != alias.startIndex else {
            throw ValidationError("\(flag) must be NAME:LABEL (got \"\(alias)\")")
        }
        let label = alias[alias.index(after: colon)...]
        guard !label.contains(":") else {
            throw ValidationError(
                "\(flag) \"\(alias)\" is ambiguous: it has more than one colon, so the name and the label could be "
                    + "split at any of them; give them apart with \(flag)-name NAME \(flag)-label LABEL")
        }
        return .alias(name: String(alias[..<colon]), label: String(label))
    }
}

/// One value of a flag that may be given once; a second is a usage error naming both (`--key a --key b` must not
/// keep b). ArgumentParser keeps only the last value of a plain optional, so such flags collect an array.
func singleValue(_ values: [String], flag: String) throws -> String? {
    guard values.count <= 1 else {
        throw ValidationError(
            "\(flag) given twice: \(quoted(values[0])) and \(quoted(values[1])); "
                + "give it once (nothing was changed)")
    }
    return values.first
}

/// How a flag's value is shown in a message: quoted, with control characters escaped.
func quoted(_ value: String) -> String { "\"" + EventQueueRecords.ValidationError.printable(value) + "\"" }
