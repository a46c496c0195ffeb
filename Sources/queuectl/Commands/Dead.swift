import ArgumentParser

struct Dead: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead",
        abstract: "Dead letters: records the sink refused or that ran out of attempts. Kept until purged.",
        subcommands: [DeadList.self, DeadRetry.self, DeadPurge.self]
    )
}
