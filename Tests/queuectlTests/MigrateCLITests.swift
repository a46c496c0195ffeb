import Foundation
import Testing
import EventQueueTestSupport

/// Issue 21: `queuectl migrate [--dry-run]`, the writer that leaves an existing file alone, and `check`'s levels,
/// through the built binary on a file the migrations of an earlier release built.
@Suite struct MigrateCLITests {
    static let migrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Migrations")

    /// A queue file as EventQueue 1.0.0 (schema 4) left it, built by the sqlite3 shell from the migration files.
    func schemaFourFile(in scratch: Scratch) async throws -> String {
        let db = scratch.file("q.db")
        var script = "PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = WAL;\n"
        for version in 1...4 {
            let name = try FileManager.default.contentsOfDirectory(atPath: Self.migrations.path)
                .first { $0.hasPrefix(String(format: "%04d_", version)) }
            let file = try #require(name)
            script += ".read \(Self.migrations.appendingPathComponent(file).path)\n"
        }
        script += "PRAGMA user_version = 4;\n"
        let sqlite = try await run("/usr/bin/sqlite3", ["-bail", db], stdin: script, in: scratch)
        #expect(sqlite.status == 0, "\(sqlite.stderr)")
        return db
    }

    @Test func aWriterLeavesAnOlderFileAloneAndMigrateMovesIt() async throws {
        let scratch = Scratch()
        let db = try await schemaFourFile(in: scratch)
        let enqueue = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        #expect(enqueue.status == 0, "\(enqueue.stderr)")
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains("schema_version: 4\n"))
        #expect(check.stdout.contains("writers: EventQueue 1.0.0 and later\n"))
        #expect(check.stdout.contains("warning: schema version 4 is older than"))

        let dryRun = try await queuectl(["migrate", "--dry-run"], db: db, in: scratch)
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.contains("would apply: 5_compatibility: the file says which releases"))
        #expect(dryRun.stdout.contains("EventQueue 1.0.0 writers and daemons refuse the file"))
        #expect(dryRun.stdout.hasSuffix("dry run: nothing changed\n"))
        #expect(try await queuectl(["check", "--json"], db: db, in: scratch).stdout.contains(#""schema_version":4"#))

        let migrate = try await queuectl(["migrate"], db: db, in: scratch)
        #expect(migrate.status == 0, "\(migrate.stderr)")
        #expect(migrate.stdout.contains("applied: 5_compatibility"))
        let after = try await queuectl(["check", "--json"], db: db, in: scratch)
        #expect(after.status == 0)
        #expect(after.stdout.contains(#""write_level":2"#))
        #expect(after.stdout.contains(#""writers":"EventQueue 1.4.0 and later""#))
        let again = try await queuectl(["migrate"], db: db, in: scratch)
        #expect(again.stdout.hasSuffix("up to date\n"))
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        #expect(status.stdout.contains(#""pending":1"#))
    }

    @Test func migrateRefusesAPlantedTriggerAndChangesNothing() async throws {
        let scratch = Scratch()
        let db = try await schemaFourFile(in: scratch)
        let plant = try await run(
            "/usr/bin/sqlite3", [db, "CREATE TRIGGER planted AFTER INSERT ON records BEGIN SELECT 1; END;"],
            in: scratch)
        #expect(plant.status == 0)
        let migrate = try await queuectl(["migrate"], db: db, in: scratch)
        #expect(migrate.status == 78)
        #expect(migrate.stderr.contains("someone with write access changed its schema"))
        let version = try await run("/usr/bin/sqlite3", [db, "PRAGMA user_version"], in: scratch)
        #expect(version.stdout == "4\n")
    }
}
