import ArgumentParser
import EventQueue

/// `queuectl identify`, `alias` and `merge`: one identity call queued in the streams of both users it names, so it
/// goes to Braze after every earlier record of either, and their later records after it. A refused call exits 64 or
/// 65 as `enqueue` does and queues nothing (`enqueueOne`).
struct Identify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identify",
        abstract: "Queue POST /users/identify: the profile of an alias, email or phone becomes the external id's.",
        discussion: """
            The device-login case: events recorded under a device alias before login, then \
            `queuectl identify --external-id U1 --alias DEVICE:device_id`, then events of U1. Prints the call's id.
            """)

    @Option(name: .customLong("external-id"), parsing: .singleValue, help: "The external id to identify as.")
    var externalID: [String] = []
    @OptionGroup var other: OtherUserOptions
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let id = try required(singleValue(externalID, flag: "--external-id"), "--external-id")
        try enqueueOne(
            .identify(externalID: id, try required(other.user(), "--alias, --email or --phone")), queue: queue)
    }
}

struct Alias: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alias", abstract: "Queue POST /users/alias/new: add an alias to an external id's profile.")

    @Option(name: .customLong("external-id"), parsing: .singleValue, help: "The external id to add the alias to.")
    var externalID: [String] = []
    @OptionGroup var other: OtherUserOptions
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let id = try required(singleValue(externalID, flag: "--external-id"), "--external-id")
        let alias = try required(other.user(), "--alias")
        guard case .alias(let name, let label) = alias else {
            throw ValidationError(
                "alias takes --alias NAME:LABEL (or --alias-name with --alias-label), not an email or phone")
        }
        try enqueueOne(.alias(externalID: id, name: name, label: label), queue: queue)
    }
}

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Queue POST /users/merge: the --merge-* profile is merged into the --keep-* one, which is kept.")

    @Option(name: .customLong("merge-external-id"), parsing: .singleValue) var mergeExternalID: [String] = []
    @Option(name: .customLong("merge-alias"), parsing: .singleValue) var mergeAlias: [String] = []
    @Option(name: .customLong("merge-alias-name"), parsing: .singleValue) var mergeAliasName: [String] = []
    @Option(name: .customLong("merge-alias-label"), parsing: .singleValue) var mergeAliasLabel: [String] = []
    @Option(name: .customLong("merge-email"), parsing: .singleValue) var mergeEmail: [String] = []
    @Option(name: .customLong("merge-phone"), parsing: .singleValue) var mergePhone: [String] = []
    @Option(name: .customLong("keep-external-id"), parsing: .singleValue) var keepExternalID: [String] = []
    @Option(name: .customLong("keep-alias"), parsing: .singleValue) var keepAlias: [String] = []
    @Option(name: .customLong("keep-alias-name"), parsing: .singleValue) var keepAliasName: [String] = []
    @Option(name: .customLong("keep-alias-label"), parsing: .singleValue) var keepAliasLabel: [String] = []
    @Option(name: .customLong("keep-email"), parsing: .singleValue) var keepEmail: [String] = []
    @Option(name: .customLong("keep-phone"), parsing: .singleValue) var keepPhone: [String] = []
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let merged = try IdentityOptions.oneUser(
            prefix: "--merge-", externalID: mergeExternalID, email: mergeEmail, phone: mergePhone, alias: mergeAlias,
            aliasName: mergeAliasName, aliasLabel: mergeAliasLabel)
        let kept = try IdentityOptions.oneUser(
            prefix: "--keep-", externalID: keepExternalID, email: keepEmail, phone: keepPhone, alias: keepAlias,
            aliasName: keepAliasName, aliasLabel: keepAliasLabel)
        try enqueueOne(
            .merge(
                try required(merged, "one of --merge-external-id, --merge-alias, --merge-email, --merge-phone"),
                into: try required(kept, "one of --keep-external-id, --keep-alias, --keep-email, --keep-phone")),
            queue: queue)
    }
}

/// The other user of `identify` and `alias`: an alias, an email or a phone, exactly one.
struct OtherUserOptions: ParsableArguments {
    @Option(parsing: .singleValue, help: "The alias as NAME:LABEL (exactly one colon).") var alias: [String] = []
    @Option(name: .customLong("alias-name"), parsing: .singleValue, help: "The alias's name (with --alias-label).")
    var aliasName: [String] = []
    @Option(name: .customLong("alias-label"), parsing: .singleValue, help: "The alias's label (with --alias-name).")
    var aliasLabel: [String] = []
    @Option(parsing: .singleValue, help: "An email (identify only).") var email: [String] = []
    @Option(parsing: .singleValue, help: "A phone number (identify only).") var phone: [String] = []

    func user() throws -> UserIdentity? {
        try IdentityOptions.oneUser(
            email: email, phone: phone, alias: alias, aliasName: aliasName, aliasLabel: aliasLabel)
    }
}

/// A side a call must name: a usage error naming the flags when it is missing.
private func required<T>(_ value: T?, _ flags: String) throws -> T {
    guard let value else { throw ValidationError("give \(flags) (nothing was queued)") }
    return value
}
