import ArgumentParser
import EventQueue
import EventQueueCommandLine
import EventQueueDelivery

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Idempotency keys of delivered records, remembered so that a writer's retry is not a duplicate.",
        subcommands: [KeysPrune.self]
    )
}

struct KeysPrune: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune", abstract: "Forget the keys of records delivered longer ago than a duration.",
        discussion: """
            Keys are forgotten by themselves 7 days after delivery; each costs about 144 bytes until then \
            (`queuectl status` shows how many and how large). A writer retrying a record whose key was forgotten \
            enqueues it again, so prune only keys no writer will retry. Keys dated in the future (planted, or \
            stored by a clock far ahead) count as delivered now. The freed pages return to the filesystem at the \
            daemon's next drain.
            """)

    @Option(
        name: .customLong("older-than"),
        help: "Forget keys delivered longer ago than this: a number and a unit, s, m, h or d (30m, 12h, 7d).")
    var olderThan: String

    @Flag(name: .customLong("dry-run"), help: "Print what would be forgotten; change nothing.")
    var dryRun = false

    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        guard let milliseconds = Self.parseDuration(olderThan) else {
            throw fail(
                "--older-than \"\(olderThan.replacingNewlines())\" is not a duration: give a whole number and a unit, "
                    + "s, m, h or d (e.g. 30m, 12h, 7d)", status: ExitStatus.usage)
        }
        let pruned = try queue.withAdmin { try $0.pruneKeys(olderThanMilliseconds: milliseconds, dryRun: dryRun) }
        let verb = dryRun ? "would forget" : "forgot"
        writeStandardOutput(
            "\(verb) \(pruned.keys) idempotency key(s) delivered more than \(olderThan) ago, about \(pruned.bytes) "
                + "bytes\n")
    }

    /// `30m`, `12h`, `7d`, `90s` as milliseconds; `nil` for anything else (no sign, no fraction, no overflow).
    static func parseDuration(_ text: String) -> Int64? {
        guard let unit = text.last, text.count >= 2 else { return nil }
        let digits = text.dropLast()
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(digits) else { return nil }
        let scales: [Character: Int64] = ["s": 1000, "m": 60 * 1000, "h": 3600 * 1000, "d": 24 * 3600 * 1000]
        guard let scale = scales[unit] else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: scale)
        return overflow ? nil : product
    }
}
