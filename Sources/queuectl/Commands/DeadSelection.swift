import ArgumentParser
import EventQueue
import EventQueueCommandLine

/// `--all` or a list of ids, never both, never neither.
struct DeadSelection: ParsableArguments {
    @Flag(help: "Every dead letter.") var all = false
    @Argument(help: "Record ids.") var ids: [Int64] = []

    func validate() throws {
        guard all != !ids.isEmpty else { throw ValidationError("give either --all or one or more record ids") }
    }

    /// The ids to act on (`nil` = all), after checking every named id is a dead letter, so a typo changes nothing.
    func resolve(_ admin: QueueAdmin) throws -> [Int64]? {
        if all { return nil }
        let dead = Set(try withQueue { () throws(QueueError) in try admin.deadLetters() }.map(\.id))
        let missing = ids.filter { !dead.contains($0) }
        guard missing.isEmpty else {
            throw fail(
                "not dead letters: \(missing.map(String.init).joined(separator: ", ")); nothing was changed",
                status: ExitStatus.problemsFound)
        }
        return ids
    }
}
