import Foundation
import Testing
import EventQueueTestSupport

/// Issue 22 #6, #7 and the writer side of #1, through the built binaries: the README's own key example for two
/// users, a key reused for a different record, remembered keys in `status` and `check`, `keys prune`, and a foreign
/// (Python) writer's INSERT on a file this release created.
@Suite struct KeysCLITests {
    func drain(_ db: String, in scratch: Scratch) async throws -> [DeliveredLine] {
        let out = scratch.file("delivered-\(UInt64.random(in: 0...UInt64.max)).jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 0, "\(drain.stderr)")
        return try DeliveredLine.parse(file: out)
    }

    @Test func theReadmeExampleForTwoUsersDeliversBoth() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let u1 = try await queuectl(
            ["enqueue", "event", "push_opened", "--key", "push-123", "--external-id", "u1"], db: db, in: scratch)
        let u2 = try await queuectl(
            ["enqueue", "event", "push_opened", "--key", "push-123", "--external-id", "u2"], db: db, in: scratch)
        #expect(u1.status == 0 && u2.status == 0, "\(u1.stderr)\(u2.stderr)")
        #expect(u1.stdout == "1\n" && u2.stdout == "2\n", "u2 got u1's id: its record was dropped")
        let delivered = try await drain(db, in: scratch)
        #expect(delivered.map { $0.object["external_id"] as? String } == ["u1", "u2"])
        // u1's retry after delivery is still the same record, no duplicate.
        let retry = try await queuectl(
            ["enqueue", "event", "push_opened", "--key", "push-123", "--external-id", "u1"], db: db, in: scratch)
        #expect(retry.status == 0 && retry.stdout == "1\n", "\(retry.stderr)")
        #expect(try await drain(db, in: scratch).isEmpty)
    }

    @Test func aKeyReusedForADifferentRecordExits65AndChangesNothing() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let first = try await queuectl(
            ["enqueue", "event", "push_opened", "--key", "push-123", "--external-id", "u1"], db: db, in: scratch)
        #expect(first.status == 0)
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        let reused = try await queuectl(
            ["enqueue", "event", "push_dismissed", "--key", "push-123", "--external-id", "u1"], db: db, in: scratch)
        #expect(reused.status == 65, "\(reused.stderr)")
        #expect(reused.stdout.isEmpty)
        #expect(reused.stderr.contains("already belongs to record 1"), "\(reused.stderr)")
        #expect(reused.stderr.contains("use a new key for a different record"), "\(reused.stderr)")
        #expect(try await queuectl(["peek", "--json"], db: db, in: scratch).stdout == peek.stdout)
    }

    /// Issue 32 #6: the same record sent again under its key with its members in another order and its numbers
    /// spelled otherwise (a writer in another language) is a retry: exit 0, the same id, before and after delivery.
    @Test func aRetrySpelledDifferentlyPrintsTheSameID() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let first =
            #"{"type":"event","idempotency_key":"push-123","external_id":"u1","name":"push_opened","properties":{"a":1,"b":"x"}}"#
        let again =
            #"{"properties":{"b":"\u0078","a":1.0},"name":"push_opened","idempotency_key":"push-123","external_id":"u1","type":"event"}"#
        let enqueued = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: first, in: scratch)
        #expect(enqueued.status == 0 && enqueued.stdout == "1\n", "\(enqueued)")
        let retried = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: again, in: scratch)
        #expect(retried.status == 0 && retried.stdout == "1\n", "\(retried)")
        #expect(try await drain(db, in: scratch).count == 1)
        let afterDelivery = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: again, in: scratch)
        #expect(afterDelivery.status == 0 && afterDelivery.stdout == "1\n", "\(afterDelivery)")
        let changed = again.replacingOccurrences(of: "1.0", with: "2")
        let reused = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: changed, in: scratch)
        #expect(reused.status == 65 && reused.stderr.contains("which is a different record"), "\(reused)")
    }

    @Test func statusCheckAndKeysPrune() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        for user in ["u1", "u2", "u3"] {
            let result = try await queuectl(
                ["enqueue", "event", "e", "--key", "k", "--external-id", user], db: db, in: scratch)
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(try await drain(db, in: scratch).count == 3)
        let status = try await queuectl(["status"], db: db, in: scratch)
        #expect(status.stdout.contains("keys:           3 remembered, about "), "\(status.stdout)")
        let json = try await queuectl(["status", "--json"], db: db, in: scratch)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["remembered_keys"] as? Int == 3)
        #expect((object?["remembered_key_bytes"] as? Int ?? 0) > 3 * 40)
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.stdout.contains("remembered_keys: 3\n"), "\(check.stdout)")

        let bad = try await queuectl(["keys", "prune", "--older-than", "7 days"], db: db, in: scratch)
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("is not a duration"), "\(bad.stderr)")
        let young = try await queuectl(["keys", "prune", "--older-than", "1h"], db: db, in: scratch)
        #expect(young.status == 0 && young.stdout.hasPrefix("forgot 0 idempotency key(s)"), "\(young.stdout)")
        // The keys are a second old once a dry run says it would forget them (not after a guessed sleep).
        try await waitFor("the keys to be a second old", timeout: .seconds(10), every: .milliseconds(100)) {
            let dry = try await queuectl(["keys", "prune", "--older-than", "1s", "--dry-run"], db: db, in: scratch)
            #expect(dry.status == 0, "\(dry.stderr)")
            return dry.stdout.hasPrefix("would forget 3 idempotency key(s)")
        }
        let prune = try await queuectl(["keys", "prune", "--older-than", "1s"], db: db, in: scratch)
        #expect(prune.status == 0 && prune.stdout.hasPrefix("forgot 3 idempotency key(s)"), "\(prune.stdout)")
        let after = try await queuectl(["status", "--json"], db: db, in: scratch)
        #expect(after.stdout.contains(#""remembered_keys":0"#), "\(after.stdout)")
    }

    @Test func aFarFutureKeyIsReportedByCheck() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        #expect(try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch).status == 0)
        let plant = try await run(
            "/usr/bin/sqlite3", [db, "INSERT INTO delivered_keys VALUES ('planted', 1, 253402300799999);"],
            in: scratch)
        #expect(plant.status == 0, "\(plant.stderr)")
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.stdout.contains("1 remembered idempotency key(s) are dated in the future"), "\(check.stdout)")
    }

    /// The writer side of #1: a foreign writer's INSERT of a payload over 256 KiB fails with the constraint's name.
    @Test func aPythonWritersOversizedPayloadIsRefusedAtTheInsert() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        #expect(try await queuectl(["enqueue", "event", "e", "--external-id", "u0"], db: db, in: scratch).status == 0)
        let script = """
            import json, sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            def insert(size):
                payload = json.dumps({"external_id": "u1", "name": "big", "p": ""}, separators=(",", ":"))
                payload = payload[:-2] + "x" * (size - len(payload)) + '"}'
                assert len(payload.encode()) == size
                with db:
                    db.execute("INSERT INTO records (kind, payload, idempotency_key) VALUES ('event', ?, NULL) "
                               "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING", (payload,))
            insert(256 * 1024)
            try:
                insert(300 * 1024)
                print("accepted")
            except sqlite3.IntegrityError as error:
                print(error)
            """
        let result = try await run("/usr/bin/env", ["python3", "-c", script, db], in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "CHECK constraint failed: payload_at_most_256_kib\n", "\(result.stdout)")
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        #expect(status.stdout.contains(#""pending":2"#), "\(status.stdout)")
    }
}
