import Foundation
import Testing

@testable import EventQueue

/// Issue 16 defect 3: schema objects EventQueue did not create are named by `check` and refused by consumers
/// (the daemon) and writers, before they can run.
@Suite struct QueueSchemaTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    func seeded() throws -> RawDatabase {
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("a", user: "u1"))
        writer.close()
        return try RawDatabase(path: path)
    }

    func expectRefused(sourceLocation: SourceLocation = #_sourceLocation, _ open: () throws(QueueError) -> Void) {
        expectUnsafeQueueFile(reasonContaining: "queuectl check --db \(path)", sourceLocation: sourceLocation, open)
    }

    @Test func aFreshQueueMatchesTheMigrations() throws {
        _ = try seeded()
        let report = QueueCheck.run(path: path)
        #expect(report.isHealthy, "\(report.problems)")
        #expect(report.facts.contains { $0.name == "schema" && $0.value == "ok" })
        #expect(
            QueueSchema.normalized("CREATE  TABLE t -- c\n (x /* y */ TEXT, 'a  b')")
                == "CREATE TABLE t (x TEXT, 'a  b')")
    }

    /// A trigger that cancels every ack (BEFORE DELETE ... RAISE(IGNORE)) made every drain redeliver forever.
    @Test func aPlantedTriggerIsNamedAndRefusedByConsumersAndWriters() throws {
        let raw = try seeded()
        try raw.execute("CREATE TABLE spy (x)")
        try raw.execute("CREATE TRIGGER evil AFTER DELETE ON records BEGIN INSERT INTO spy VALUES (old.payload); END")
        let report = QueueCheck.run(path: path)
        #expect(report.problems.contains { $0.contains("trigger evil on records was not created by EventQueue") })
        #expect(report.problems.contains { $0.contains("table spy on spy was not created by EventQueue") })
        expectRefused { () throws(QueueError) in _ = try QueueConsumer(path: path) }
        expectRefused { () throws(QueueError) in _ = try QueueWriter(path: path) }
        #expect(try raw.scalar("SELECT count(*) FROM records") == "1")
    }

    /// `trusted_schema=OFF` cannot be set with this SQLite, so a trigger planted while a long-lived consumer (the
    /// daemon) already runs must not fire either: its next transaction sees the schema cookie move, compares the
    /// schema again and refuses before any statement of its own runs. Without the re-check the ack below ran the
    /// planted trigger (the spy table got the payload) and the BEFORE DELETE trigger silently cancelled the ack.
    @Test func aTriggerPlantedWhileAConsumerRunsNeverFires() throws {
        let raw = try seeded()
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let claim = try consumer.claim(limit: 10, leaseMilliseconds: 60_000)
        #expect(claim.records.count == 1)
        try raw.execute("CREATE TABLE spy (x)")
        try raw.execute("CREATE TRIGGER evil AFTER DELETE ON records BEGIN INSERT INTO spy VALUES (old.payload); END")
        expectRefused { () throws(QueueError) in _ = try consumer.ack(claim.records.map(\.id), lease: claim.lease) }
        expectRefused { () throws(QueueError) in _ = try consumer.claim(limit: 10, leaseMilliseconds: 60_000) }
        #expect(try raw.scalar("SELECT count(*) FROM spy") == "0")
        #expect(try raw.scalar("SELECT count(*) FROM records") == "1")
        // Once the planted objects are gone, the same consumer carries on.
        try raw.execute("DROP TRIGGER evil")
        try raw.execute("DROP TABLE spy")
        #expect(try consumer.ack(claim.records.map(\.id), lease: claim.lease) == 1)
    }

    /// The same for a writer that stays open and appends in a batch (`queuectl enqueue --ndjson`, an import):
    /// `QueueWriter.batch` opened its own `BEGIN IMMEDIATE` and skipped the re-check, so a trigger planted after
    /// the writer opened fired on every insert of the batch.
    @Test func aTriggerPlantedWhileABatchWriterRunsNeverFires() throws {
        let raw = try seeded()
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        try raw.execute("CREATE TABLE spy (x)")
        try raw.execute("CREATE TRIGGER evil AFTER INSERT ON records BEGIN INSERT INTO spy VALUES (new.payload); END")
        do {
            _ = try writer.batch { batch in try batch.enqueue(event("b", user: "u2")) }
            Issue.record("a batch ran with a planted trigger")
        } catch let error as QueueError {
            guard case .unsafeQueueFile = error else {
                Issue.record("expected unsafeQueueFile, got \(error)")
                return
            }
        }
        #expect(try raw.scalar("SELECT count(*) FROM spy") == "0")
        #expect(try raw.scalar("SELECT count(*) FROM records") == "1")
        try raw.execute("DROP TRIGGER evil")
        try raw.execute("DROP TABLE spy")
        let outcome = try writer.batch { batch in try batch.enqueue(event("b", user: "u2")) }
        #expect(outcome.id == 2)
    }

    @Test func aViewIsRefusedByWriters() throws {
        let raw = try seeded()
        try raw.execute("CREATE VIEW records_view AS SELECT * FROM records")
        expectRefused { () throws(QueueError) in _ = try QueueWriter(path: path) }
        #expect(QueueCheck.run(path: path).problems.contains { $0.contains("view records_view") })
    }

    /// An index replaced by another of the same name passed `check`; now its definition is compared.
    @Test func anIndexReplacedUnderTheSameNameIsNamed() throws {
        let raw = try seeded()
        try raw.execute("DROP INDEX records_user_order")
        try raw.execute("CREATE INDEX records_user_order ON records (id)")
        let report = QueueCheck.run(path: path)
        #expect(
            report.problems.contains {
                $0.contains(
                    "index records_user_order differs from the one EventQueue creates: found index CREATE INDEX "
                        + "records_user_order ON records (id)")
            }, "\(report.problems)")
        expectRefused { () throws(QueueError) in _ = try QueueConsumer(path: path) }
        // A missing index is named too.
        try raw.execute("DROP INDEX records_dead")
        #expect(QueueCheck.run(path: path).problems.contains { $0.contains("index records_dead is missing") })
    }
}
