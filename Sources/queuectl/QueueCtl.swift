import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

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

    /// Like ArgumentParser's `main`, except that a usage error is one line on stderr (scripts and log scrapers
    /// read errors line by line); `--help` and `--version` print as usual.
    static func main() async {
        do {
            var command = try parseAsRoot(GlobalOptions.hoisted(Array(CommandLine.arguments.dropFirst())))
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            UnservedQueueNotice.flush()
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }
            let message = unknownRecordKindMessage(CommandLine.arguments) ?? self.message(for: error)
            if !message.isEmpty {
                writeStandardError("queuectl: error: \(message.replacingNewlines()) (see `queuectl --help`)\n")
            }
            Glibc.exit(code.rawValue)
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
