import Foundation
import Testing
import EventQueueTestSupport

/// Issue 40 #5: a CHECK that someone added to `records` with `ALTER TABLE` refuses every enqueue. That is a changed
/// schema, exit 78 with the constraint named, not "retry later" (74, as it was); nothing already queued changes.
@Suite struct PlantedCheckTests {
    @Test func aCheckAddedToRecordsIsAChangedSchemaNotARetry() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let seeded = try await queuectl(
            ["enqueue", "attribute", "plan", "gold", "--external-id", "u1"], db: db, in: scratch)
        #expect(seeded.status == 0, "\(seeded)")
        _ = try await sqlite3(
            db, "ALTER TABLE records ADD COLUMN planted TEXT CONSTRAINT no_events CHECK (kind != 'event')", in: scratch)
        let refused = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
        #expect(refused.status == 78, "\(refused)")
        #expect(refused.stderr.contains("no_events") && refused.stderr.contains("changed the schema"), "\(refused)")
        #expect(try await sqlite3(db, "SELECT count(*) FROM records", in: scratch) == ["1"])
    }
}
