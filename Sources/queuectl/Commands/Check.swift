import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract:
            "Check a queue file without changing it: integrity, schema version, pragmas, permissions, the writers' line.",
        discussion: "Exit status 0 when healthy, 1 when a problem was found (each printed on its own line).")

    @Flag(help: "Print the report as JSON.") var json = false
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let busyTimeout = try queue.options().busyTimeoutMilliseconds
        let report = QueueCheck.run(path: try queue.existingPath(), busyTimeoutMilliseconds: busyTimeout)
        // The writers' line orders this release's writers; when it is off they still write, unordered.
        let line = WriteLineReport.read(queuePath: report.path)
        let lineWarning: String? =
            if case .off(let reason) = line.state {
                "the writers' line is off: \(reason)"
            } else if line.holderIsStuck {
                "the writers' line: \(line.summary)"
            } else { nil }
        let warnings = report.warnings + (lineWarning.map { [$0] } ?? [])
        if json {
            var facts = JSONObject()
            for fact in report.facts {
                // Counts and sizes are JSON numbers; names (journal_mode) and the octal file_mode stay strings.
                let isOctal = fact.value.count > 1 && fact.value.hasPrefix("0")
                facts[fact.name] =
                    isOctal ? .string(fact.value) : Int64(fact.value).map(ReportJSON.number) ?? .string(fact.value)
            }
            let object: JSONValue = [
                "path": .string(report.path),
                "healthy": .bool(report.isHealthy),
                "facts": .object(facts),
                "problems": .array(report.problems.map(JSONValue.string)),
                "warnings": .array(warnings.map(JSONValue.string)),
                "writers_line": ReportJSON.writeLine(line),
            ]
            writeStandardOutput(object.serialized + "\n")
        } else {
            var text = "queue: \(report.path)\n"
            for fact in report.facts { text += "\(fact.name): \(fact.value)\n" }
            text += "writers' line: \(line.summary)\n"
            for warning in warnings { text += "warning: \(warning)\n" }
            for problem in report.problems { text += "problem: \(problem)\n" }
            text += report.isHealthy ? "ok\n" : "unhealthy: \(report.problems.count) problem(s)\n"
            writeStandardOutput(text)
        }
        if !report.isHealthy { throw ExitCode(ExitStatus.problemsFound.rawValue) }
    }
}
