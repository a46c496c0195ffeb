import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

@main
struct QueueCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queuectl",
        abstract: "Administer an EventQueue file: enqueue, drain, inspect, dead letters.",
        discussion: """
            \(QueueEnvironment.databaseHelp) --db and --socket may also come before the subcommand.

            """ + ExitStatus.helpText(for: .queuectl),
        version: EventQueueVersion.string,
        subcommands: [
            Enqueue.self, Drain.self, Status.self, Peek.self, Dead.self, Check.self, Migrate.self, Salvage.self,
            ImportLegacy.self, Keys.self, Forget.self, Identify.self, Alias.self, Merge.self,
        ]
    )

    /// A usage error is one line on stderr; an unknown record kind is named (`unknownRecordKindMessage`).
    static func main() async {
        await runReportingErrors(
            GlobalOptions.hoisted(Array(CommandLine.arguments.dropFirst())), afterRun: UnservedQueueNotice.flush
        ) {
            let message = unknownRecordKindMessage(CommandLine.arguments) ?? $0
            if !message.isEmpty {
                writeStandardError("queuectl: error: \(message.replacingNewlines()) (see `queuectl --help`)\n")
            }
        }
    }
}

/// `queuectl --db X status`: `--db` and `--socket` given before the subcommand are moved after it, where the
/// subcommands declare them (swift-argument-parser has no options inherited by subcommands). Only a leading run
/// of those options moves; anything else keeps its place, so every existing spelling parses as before.
enum GlobalOptions {
    static let movable: Set<String> = ["--db", "--socket"]

    static func hoisted(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if movable.contains(argument), index + 1 < arguments.count {
                leading += [argument, arguments[index + 1]]
                index += 2
            } else if let name = argument.split(separator: "=", maxSplits: 1).first, argument.contains("="),
                movable.contains(String(name))
            {
                leading.append(argument)
                index += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.count else { return arguments }
        var rest = Array(arguments[index...])
        // Before a `--` terminator, whose followers are positional values.
        let insertion = rest.firstIndex(of: "--") ?? rest.endIndex
        rest.insert(contentsOf: leading, at: insertion)
        return rest
    }
}
