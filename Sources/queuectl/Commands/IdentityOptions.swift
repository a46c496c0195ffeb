import ArgumentParser
import EventQueue

/// `--external-id`, `--braze-id`, `--email`, `--phone`, or an alias (`--alias-name` with `--alias-label`, or
/// `--alias NAME:LABEL`): exactly one.
///
/// Why `--alias` refuses a second colon: `urn:x:1:crm` splits as well at any of its colons, and a wrong split
/// sends the record to another Braze user. With exactly one colon there is one reading; anything else must be
/// spelled with the two separate options, which hold any text.
struct IdentityOptions: ParsableArguments {
    @Option(name: .customLong("external-id"), help: "The user's external id.")
    var externalID: String?
    @Option(name: .customLong("braze-id"), help: "The user's Braze id.")
    var brazeID: String?
    @Option(help: "The user's email (as the identifier).")
    var email: String?
    @Option(help: "The user's phone number (as the identifier).")
    var phone: String?
    @Option(
        help: """
            A user alias as NAME:LABEL, with exactly one colon (a name or label holding a colon: use \
            --alias-name and --alias-label).
            """)
    var alias: String?
    @Option(name: .customLong("alias-name"), help: "A user alias's name (with --alias-label); any text.")
    var aliasName: String?
    @Option(name: .customLong("alias-label"), help: "A user alias's label (with --alias-name); any text.")
    var aliasLabel: String?

    func validate() throws {
        _ = try identity()
    }

    func identity() throws -> UserIdentity {
        var found: [UserIdentity] = []
        if let externalID { found.append(.externalID(externalID)) }
        if let brazeID { found.append(.brazeID(brazeID)) }
        if let email { found.append(.email(email)) }
        if let phone { found.append(.phone(phone)) }
        if let alias { found.append(try Self.splitAlias(alias)) }
        switch (aliasName, aliasLabel) {
        case (let name?, let label?): found.append(.alias(name: name, label: label))
        case (nil, nil): break
        default:
            throw ValidationError("--alias-name and --alias-label go together: give both")
        }
        guard found.count == 1, let identity = found.first else {
            throw ValidationError(
                "name exactly one user with --external-id, --braze-id, --email, --phone or --alias (got "
                    + "\(found.count))")
        }
        return identity
    }

    /// `NAME:LABEL` with exactly one colon, neither side empty; anything else is refused, never guessed.
    static func splitAlias(_ alias: String) throws -> UserIdentity {
        guard let colon = alias.firstIndex(of: ":"), colon != alias.startIndex else {
            throw ValidationError("--alias must be NAME:LABEL (got \"\(alias)\")")
        }
        let label = alias[alias.index(after: colon)...]
        guard !label.contains(":") else {
            throw ValidationError(
                "--alias \"\(alias)\" is ambiguous: it has more than one colon, so the name and the label could be "
                    + "split at any of them; give them apart with --alias-name NAME --alias-label LABEL")
        }
        return .alias(name: String(alias[..<colon]), label: String(label))
    }
}
