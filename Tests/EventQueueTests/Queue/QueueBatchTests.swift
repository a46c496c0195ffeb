import Testing

@testable import EventQueue

/// `QueueWriter.batch`: records appended as they are read, all committed or none, and bad entries kept as dead
/// letters with their reason in the same transaction; `retryDeadChecked` leaves still-invalid ones dead.
@Suite struct QueueBatchTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    @Test func goodAndBadEntriesCommitTogetherWithTheReason() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let outcomes = try writer.batch { batch in
            [
                try batch.enqueueOrDeadLetter(Record.event("ok", user: .externalID("u1"), idempotencyKey: "k1")),
                try batch.enqueueOrDeadLetter(
                    Record.event("bad", user: .externalID("u1"), properties: ["$x": 1], idempotencyKey: "k2"),
                    context: "entry 2: "),
            ]
        }
        guard case .enqueued = outcomes[0], case .deadLettered(_, let reason) = outcomes[1] else {
            Issue.record("unexpected \(outcomes)")
            return
        }
        #expect(reason.hasPrefix("entry 2: invalid record: properties.$x"))
        let raw = try RawDatabase(path: path)
        let rows = try raw.rows("SELECT state, last_error IS NOT NULL, dead_at_ms IS NOT NULL FROM records ORDER BY id")
        #expect(rows.map { $0[0] } == ["pending", "dead"])
        #expect(rows[1][1] == "1" && rows[1][2] == "1")

        // Same keys again: nothing written, the existing ids returned.
        let again = try writer.batch { batch in
            [
                try batch.enqueueOrDeadLetter(Record.event("ok", user: .externalID("u1"), idempotencyKey: "k1")),
                try batch.enqueueOrDeadLetter(
                    Record.event("bad", user: .externalID("u1"), properties: ["$x": 1], idempotencyKey: "k2")),
            ]
        }
        #expect(again == [.alreadyKnown(id: outcomes[0].id), .alreadyKnown(id: outcomes[1].id)])
    }

    @Test func aThrowingBodyRollsBackEverything() throws {
        struct Stop: Error {}
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(throws: Stop.self) {
            try writer.batch { batch in
                _ = try batch.enqueue(Record.event("a", user: .externalID("u1")))
                _ = try batch.deadLetter(Record.event("b", user: .externalID("u1")), reason: "test")
                throw Stop()
            }
        }
        let raw = try RawDatabase(path: path)
        #expect(try raw.rows("SELECT count(*) FROM records") == [["0"]])
    }

    /// An entry too large for the file (a payload is at most 256 KiB, migration 6's CHECK) is kept as a stub naming its
    /// user and size, with the reason; it used to fail the whole batch (an import) with exit 74.
    @Test func anOversizedDeadLetterIsKeptAsAStubNamingItsUser() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let huge = String(repeating: "x", count: 300 * 1024)
        let outcome = try writer.batch { batch in
            try batch.enqueueOrDeadLetter(
                Record.event("big", user: .externalID("u1"), properties: ["blob": .string(huge)]), context: "entry 1: ")
        }
        guard case .deadLettered(_, let reason) = outcome else {
            Issue.record("unexpected \(outcome)")
            return
        }
        #expect(reason.contains("kept as a stub naming its user"))
        let raw = try RawDatabase(path: path)
        let rows = try raw.rows("SELECT payload, user_key, state FROM records")
        #expect(rows.count == 1)
        #expect(rows.first?[1] == "external_id:u1" && rows.first?[2] == "dead")
        #expect(rows.first?[0]?.contains("eventqueue_dropped_payload_bytes") == true)
    }

    @Test func aDeadLetterMustStillNameAUser() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        #expect(throws: QueueError.self) {
            try writer.batch { batch in
                _ = try batch.deadLetter(Record(kind: .event, object: ["name": "x"]), reason: "no user")
            }
        }
    }

    @Test func checkedRetryKeepsStillInvalidDeadLetters() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let ids = try writer.batch { batch in
            [
                try batch.deadLetter(Record.event("fine", user: .externalID("u1")), reason: "sink said no").id,
                try batch.deadLetter(Record.event("", user: .externalID("u1")), reason: "empty name").id,
            ]
        }
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let report = try consumer.admin.retryDeadChecked(ids: nil)
        #expect(report.retried == [ids[0]])
        #expect(report.stillInvalid.map(\.id) == [ids[1]])
        #expect(report.stillInvalid.first?.reason.contains("name must be 1 to 255 characters") == true)
        let dead = try consumer.admin.deadLetters()
        #expect(dead.map(\.id) == [ids[1]])
        #expect(dead.first?.lastError?.hasPrefix("still invalid at retry: ") == true)
    }
}
