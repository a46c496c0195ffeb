import Foundation
import Testing
import EventQueueTestSupport

/// Issue 32 #4 from outside: a group member with the `sqlite3` shell plays "the next release" (a `user_version`
/// one above this release's, a `schema_levels` row keeping both levels) and records their own index in
/// `schema_additions`. The built `queuectl` refuses to write or drain (exit 78) and `check` names the index, while
/// an index the next release could add (plain, on a column) is still used as it is.
@Suite struct RecordedAdditionCLITests {
    /// A queue with one keyed record, then `sql` and the index it creates recorded as a newer migration's.
    func plant(_ sql: String, index: String, in scratch: Scratch) async throws -> String {
        let db = scratch.file("q.db")
        let first = try await queuectl(
            ["enqueue", "event", "before", "--key", "k1", "--external-id", "u1"], db: db, in: scratch)
        #expect(first.status == 0, "\(first)")
        let version = try await run("/usr/bin/sqlite3", [db, "PRAGMA user_version"], in: scratch)
        let next = (Int(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) + 1
        let plant = try await run(
            "/usr/bin/sqlite3",
            [
                db,
                sql + "; INSERT INTO schema_levels VALUES (\(next), 1, 1, '9.0.0'); "
                    + "INSERT INTO schema_additions SELECT name, \(next), type, tbl_name, sql FROM sqlite_schema "
                    + "WHERE name = '\(index)'; PRAGMA user_version = \(next);",
            ], in: scratch)
        #expect(plant.status == 0, "\(plant)")
        return db
    }

    @Test func aRecordedExpressionIndexIsRefusedByEnqueueDrainAndCheck() async throws {
        let scratch = Scratch()
        let db = try await plant(
            "CREATE INDEX planted_overflow ON delivered_user_keys (abs(record_id * 0 - 9223372036854775807 - 1))",
            index: "planted_overflow", in: scratch)
        let enqueue = try await queuectl(
            ["enqueue", "event", "after", "--key", "k2", "--external-id", "u2"], db: db, in: scratch)
        #expect(enqueue.status == 78, "\(enqueue)")
        #expect(enqueue.stderr.contains("index planted_overflow on delivered_user_keys"), "\(enqueue.stderr)")
        #expect(enqueue.stderr.contains("indexes an expression"), "\(enqueue.stderr)")
        #expect(enqueue.stderr.contains("Upgrade it to EventQueue 9.0.0 or later"), "\(enqueue.stderr)")
        let out = scratch.file("delivered.jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 78, "\(drain)")
        #expect(try DeliveredLine.parse(file: out).isEmpty, "nothing was sent that could not be acknowledged")
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 1, "\(check)")
        #expect(check.stdout.contains("schema: differs\n"), "\(check.stdout)")
        #expect(
            check.stdout.contains("problem: schema: index planted_overflow on delivered_user_keys, recorded by schema"),
            "\(check.stdout)")
    }

    @Test func aRecordedUniqueIndexIsRefusedByEnqueueAndCheck() async throws {
        let scratch = Scratch()
        let db = try await plant(
            "CREATE UNIQUE INDEX planted_unique ON records (kind)", index: "planted_unique", in: scratch)
        let enqueue = try await queuectl(["enqueue", "event", "after", "--external-id", "u2"], db: db, in: scratch)
        #expect(enqueue.status == 78, "\(enqueue)")
        #expect(enqueue.stderr.contains("index planted_unique on records"), "\(enqueue.stderr)")
        #expect(enqueue.stderr.contains("is UNIQUE"), "\(enqueue.stderr)")
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 1, "\(check)")
        #expect(check.stdout.contains("planted_unique") && check.stdout.contains("is UNIQUE"), "\(check.stdout)")
    }

    @Test func aRecordedPlainIndexIsStillUsed() async throws {
        let scratch = Scratch()
        let db = try await plant(
            "CREATE INDEX records_created ON records (created_at_ms)", index: "records_created", in: scratch)
        let enqueue = try await queuectl(["enqueue", "event", "after", "--external-id", "u2"], db: db, in: scratch)
        #expect(enqueue.status == 0 && enqueue.stdout == "2\n", "\(enqueue)")
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 0, "\(check)")
        #expect(check.stdout.contains("its changes are additive"), "\(check.stdout)")
    }
}
