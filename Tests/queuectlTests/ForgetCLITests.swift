import Foundation
import Testing
import EventQueue
import EventQueueTestSupport

/// `queuectl forget` on a local file (no daemon answers on the socket it would ask): exactly one user with the
/// identity flags of `enqueue`, what it removed in text and in JSON, and nothing changed by a usage error.
@Suite struct ForgetCLITests {
    /// A queue with three records of u1 (one with a canary address), one of an alias, and two of u2.
    func queue(in scratch: Scratch) async throws -> String {
        let db = scratch.file("q.db")
        let lines = [
            #"{"type":"attribute","external_id":"u1","email":"canary-cli@example.com"}"#,
            #"{"type":"event","external_id":"u1","name":"played"}"#,
            #"{"type":"event","external_id":"u2","name":"played"}"#,
            #"{"type":"event","user_alias":{"alias_name":"n:1","alias_label":"crm"},"name":"played"}"#,
            #"{"type":"event","external_id":"u1","name":"again","idempotency_key":"k1"}"#,
            #"{"type":"event","external_id":"u2","name":"again"}"#,
        ].joined(separator: "\n")
        let result = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: lines, in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        return db
    }

    /// No daemon: a socket path where nothing listens.
    func forget(_ arguments: [String], db: String, in scratch: Scratch) async throws -> ProcessResult {
        try await queuectl(["forget"] + arguments + ["--socket", scratch.file("none.sock")], db: db, in: scratch)
    }

    @Test(arguments: [
        [String](), ["--braze-delete"], ["--external-id", "u1", "--email", "a@example.com"],
        ["--external-id", "u1", "--alias", "n:l"], ["--alias-name", "n"], ["--alias", "a:b:c"],
    ])
    func noUserOrMoreThanOneExits64AndChangesNothing(arguments: [String]) async throws {
        let scratch = Scratch()
        let db = try await queue(in: scratch)
        let before = FileManager.default.contents(atPath: db)
        let result = try await forget(arguments, db: db, in: scratch)
        #expect(result.status == 64, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(FileManager.default.contents(atPath: db) == before, "the file did not change")
        #expect(!FileManager.default.fileExists(atPath: db + "-wal"), "nor was it opened")
    }

    @Test func forgetPrintsWhatItRemovedAndLeavesTheOthers() async throws {
        let scratch = Scratch()
        let db = try await queue(in: scratch)
        let result = try await forget(["--external-id", "u1"], db: db, in: scratch)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.hasPrefix("forgot external_id:u1: removed 3 pending, 0 in flight, 0 dead"), "\(result)")
        #expect(result.stdout.contains("no byte of the removed records is left"))
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        let live = try #require(try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as? [[String: Any]])
        #expect(live.count == 3)
        let bytes = FileManager.default.contents(atPath: db) ?? Data()
        #expect(bytes.range(of: Data("canary-cli@example.com".utf8)) == nil)
    }

    @Test func jsonGivesTheSameAsAnObjectAndTheErasureShowsInPeekAndStatus() async throws {
        let scratch = Scratch()
        let db = try await queue(in: scratch)
        let result = try await forget(
            ["--alias-name", "n:1", "--alias-label", "crm", "--braze-delete", "--json"], db: db, in: scratch)
        #expect(result.status == 0, "\(result)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["pending"] as? Int == 1 && report["removed"] as? Int == 1 && report["dead"] as? Int == 0)
        #expect(report["by"] as? String == "local" && report["bytes_gone"] as? Bool == true)
        #expect(
            (report["user"] as? [String: Any])?["user_alias"] as? [String: String] == [
                "alias_name": "n:1", "alias_label": "crm",
            ])
        let erasureID = try #require(report["erasure_id"] as? Int)
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        let live = try #require(try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as? [[String: Any]])
        let erasure = try #require(live.first { $0["id"] as? Int == erasureID })
        #expect(erasure["type"] as? String == "erasure" && erasure["identifier_type"] as? String == "user_aliases")
        let text = try await queuectl(["peek"], db: db, in: scratch)
        #expect(text.stdout.contains("\terasure(user_aliases)\tpending\t"), "\(text.stdout)")
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(stats["erasures_pending"] as? Int == 1 && stats["erasures_dead"] as? Int == 0)
        let plain = try await queuectl(["status"], db: db, in: scratch)
        #expect(plain.stdout.contains("erasures:       1 waiting, 0 dead"), "\(plain.stdout)")
    }

    /// Issue 40 #3: `--ndjson FILE` forgets every user in it (blank lines skipped) with one scrub.
    @Test func ndjsonForgetsEveryUserInTheFileWithOneScrub() async throws {
        let scratch = Scratch()
        let db = try await queue(in: scratch)
        let file = scratch.file("users.ndjson")
        try (#"{"external_id":"u1"}"# + "\n\n" + #"{"user_alias":{"alias_name":"n:1","alias_label":"crm"}}"# + "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let result = try await forget(["--ndjson", file, "--json"], db: db, in: scratch)
        #expect(result.status == 0, "\(result)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["users"] as? Int == 2 && report["pending"] as? Int == 4 && report["bytes_gone"] as? Bool == true)
        #expect(report["user"] is NSNull, "several users: no one user")
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        let live = try #require(try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as? [[String: Any]])
        #expect(live.count == 2)
        let again = try await forget(["--ndjson", file], db: db, in: scratch)
        #expect(again.status == 0 && again.stdout.hasPrefix("forgot 2 users: removed 0 pending"), "\(again)")
    }

    @Test func ndjsonWithAnIdentityFlagOrALineThatIsNoIdentityChangesNothing() async throws {
        let scratch = Scratch()
        let db = try await queue(in: scratch)
        let before = FileManager.default.contents(atPath: db)
        let good = scratch.file("good.ndjson")
        try #"{"external_id":"u1"}"#.write(toFile: good, atomically: true, encoding: .utf8)
        let both = try await forget(["--ndjson", good, "--external-id", "u2"], db: db, in: scratch)
        #expect(both.status == 64, "\(both)")
        let bad = scratch.file("bad.ndjson")
        try (#"{"external_id":"u1"}"# + "\n" + #"{"external_id":"u2","email":"a@example.com"}"#)
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try await forget(["--ndjson", bad], db: db, in: scratch)
        #expect(refused.status == 65 && refused.stderr.contains("bad.ndjson:2"), "\(refused)")
        #expect(FileManager.default.contents(atPath: db) == before, "the file did not change")
    }

    @Test func theAliasSpelledAsEnqueueSpellsItAndAMissingQueueIs66() async throws {
        let scratch = Scratch()
        let db = try await queue(in: scratch)
        let result = try await forget(["--alias", "n:1:crm"], db: db, in: scratch)
        #expect(result.status == 64, "two colons are ambiguous, as for enqueue: \(result)")
        let missing = try await forget(["--external-id", "u1"], db: scratch.file("nothing.db"), in: scratch)
        #expect(missing.status == 66 && !FileManager.default.fileExists(atPath: scratch.file("nothing.db")))
    }
}
