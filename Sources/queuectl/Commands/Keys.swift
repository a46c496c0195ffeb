import ArgumentParser

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Idempotency keys of delivered records, remembered so that a writer's retry is not a duplicate.",
        subcommands: [KeysPrune.self]
    )
}
