import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

struct Salvage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Copy every readable record of a damaged queue file into a new queue file.",
        discussion: """
            OLD is opened read-only and never modified (stop the daemon and writers on it first). NEW must not \
            exist; it is created with the current schema. Pending and leased records are copied as pending, dead \
            letters stay dead with their last error; ids, creation times and idempotency keys are kept. Each \
            payload is validated again. Prints how many records were recovered, how many could not be read and \
            how many were invalid. Exit status: 0 when the salvage ran (even if some records were lost: see the \
            counts); 66 OLD does not exist; 73 NEW exists or cannot be created; 74 I/O error; 78 OLD is not an \
            SQLite queue file, or not even its schema can be read.
            """)

    @Argument(help: "The damaged queue file (read only).") var old: String
    @Argument(help: "The new queue file to create.") var new: String
    @Flag(help: "Print the report as JSON.") var json = false
    @Option(
        name: .customLong("max-attempts"),
        help: "The daemon's --max-attempts: a live record's stored attempts are kept below it (1 to 1000000).")
    var maxAttempts: Int = 10

    func validate() throws {
        guard (1...1_000_000).contains(maxAttempts) else {
            throw fail("--max-attempts must be between 1 and 1000000", status: ExitStatus.usage)
        }
    }

    func run() throws {
        guard old != new else {
            throw fail("OLD and NEW must be different files", status: ExitStatus.usage)
        }
        let report: SalvageReport
        do {
            report = try QueueSalvage.run(from: old, to: new, maxAttempts: maxAttempts)
        } catch {
            if case .cannotOpen(let path, _) = error, path == old {
                throw fail(error.description, status: ExitStatus.inputMissing)
            }
            throw fail(error)
        }
        if json {
            let object: JSONValue = [
                "source": .string(report.source),
                "destination": .string(report.destination),
                "recovered": ReportJSON.number(report.recovered),
                "recovered_pending": ReportJSON.number(report.recoveredPending),
                "recovered_dead": ReportJSON.number(report.recoveredDead),
                "unreadable": ReportJSON.number(report.unreadable),
                "unreadable_ids": .array(report.unreadableIDs.map { ReportJSON.number($0) }),
                "invalid": ReportJSON.number(report.invalid),
                "damaged_id_ranges": .array(
                    report.damagedRanges.map {
                        .array([ReportJSON.number($0.lowerBound), ReportJSON.number($0.upperBound)])
                    }
                ),
                "index_complete": .bool(report.indexComplete),
                "delivered_keys": ReportJSON.number(report.deliveredKeys),
                "complete": .bool(report.isComplete),
                "seen": ReportJSON.number(report.seen),
                "renumbered": ReportJSON.number(report.renumbered),
                "clamped": ReportJSON.number(report.clamped),
                "invalid_reasons": .array(report.invalidReasons.map { .string($0) }),
            ]
            writeStandardOutput(object.serialized + "\n")
            return
        }
        var text =
            "salvaged \(old) into \(new): recovered \(report.recovered) records (\(report.recoveredPending) pending, "
            + "\(report.recoveredDead) dead), unreadable \(report.unreadable), invalid \(report.invalid)"
        if !report.damagedRanges.isEmpty {
            text +=
                "; damaged id ranges "
                + report.damagedRanges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ", ")
        }
        if !report.unreadableIDs.isEmpty {
            let more = report.unreadable > report.unreadableIDs.count ? ", ..." : ""
            text += "; unreadable ids " + report.unreadableIDs.map(String.init).joined(separator: ", ") + more
        }
        if report.renumbered > 0 { text += "; renumbered \(report.renumbered) (id out of range or taken)" }
        if report.clamped > 0 { text += "; \(report.clamped) with times or attempts brought into range" }
        if !report.invalidReasons.isEmpty {
            text += "; invalid: " + report.invalidReasons.prefix(10).joined(separator: ", ")
        }
        if !report.indexComplete { text += "; the live index was damaged too, so unreadable is a lower bound" }
        writeStandardOutput(text + "\n")
    }
}
