import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

/// `queuectl migrate [--dry-run]`: the admin's way to move an existing file to this release's schema (writers
/// never do; the daemon does at start).
struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Bring a queue file's schema up to this release's (the daemon also does at start).",
        discussion: """
            Writers never migrate an existing file. Lists each migration applied, or with --dry-run the ones \
            that would be, without changing the file. A file a newer release migrated is left as it is. Run \
            `queuectl check` for the releases that may write and consume the file.
            """)

    @Flag(help: "Show the migrations without applying them.") var dryRun = false
    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let path = try queue.existingPath()
        let options = try queue.options()
        let plan = try withQueue { () throws(QueueError) in
            dryRun
                ? try QueueMigration.plan(path: path, options: options)
                : try QueueMigration.run(path: path, options: options)
        }
        var text = "queue: \(plan.path)\nschema_version: \(plan.fromVersion)\n"
        if plan.steps.isEmpty {
            text +=
                plan.fromVersion > Migrations.latestVersion
                ? "newer than this release's \(Migrations.latestVersion): left as it is\n"
                : "up to date\n"
            writeStandardOutput(text)
            return
        }
        for step in plan.steps {
            text += "\(dryRun ? "would apply" : "applied"): \(step.version)_\(step.name): \(step.summary)\n"
        }
        if plan.leavesContractlessReleasesBehind {
            text +=
                "note: EventQueue 1.0.0 writers and daemons refuse the file from schema version "
                + "\(SchemaContract.firstContractVersion) on; upgrade them first\n"
        }
        text += dryRun ? "dry run: nothing changed\n" : "schema_version: \(plan.toVersion)\n"
        writeStandardOutput(text)
    }
}
