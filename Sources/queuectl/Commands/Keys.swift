import ArgumentParser
import EventQueue
import EventQueueCommandLine
import EventQueueDelivery

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Idempotency keys of delivered records, remembered so that a writer's retry is not a duplicate.",
        subcommands: [KeysPrune.self]
    )
}
