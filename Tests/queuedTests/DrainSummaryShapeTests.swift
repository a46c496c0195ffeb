import Foundation
import Testing
import EventQueueTestSupport

/// `queuectl drain --local --json` and `queuectl drain --wait --json` (through the daemon) print one shape: the
/// same keys in the same order, `lock_holder` included (the remote path used to drop it).
@Suite struct DrainSummaryShapeTests {
    static func keys(_ output: String) throws -> [String] {
        let data = Data(output.utf8)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(output)")
        // JSONSerialization forgets the order: read it from the text, key by key.
        let ordered = object.keys.sorted {
            (output.range(of: "\"\($0)\":")?.lowerBound ?? output.endIndex)
                < (output.range(of: "\"\($1)\":")?.lowerBound ?? output.endIndex)
        }
        return ordered
    }

    /// Another drainer's lock, live for ten minutes (within the clock horizon).
    static func plantLock(_ db: String, in scratch: Scratch) async throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let planted = try await run(
            "/usr/bin/sqlite3",
            [
                db,
                "INSERT OR REPLACE INTO drain_lock (id, owner, acquired_at_ms, expires_at_ms) "
                    + "VALUES (1, 'another-host:4242:test', \(now), \(now + 600_000))",
            ], in: scratch)
        try #require(planted.status == 0, "\(planted.stderr)")
    }

    @Test func localAndRemoteSummariesHaveTheSameKeys() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(3, db: db, in: scratch)
        try await Self.plantLock(db, in: scratch)

        let local = try await queuectl(["drain", "--local", "--json", "--sink", "null"], db: db, in: scratch)
        #expect(local.status == 13, "\(local.stderr)")
        let localLocked = try Self.keys(local.stdout)
        #expect(localLocked.contains("lock_holder"))

        let daemon = try await DaemonProcess(scratch: scratch, db: db)
        try await withDaemon(daemon) { daemon in
            let remote = try await run(
                Products.queuectl, ["drain", "--socket", daemon.socket, "--wait", "--json"], in: scratch)
            #expect(remote.status == 13, "\(remote.stdout) \(remote.stderr)")
            #expect(try Self.keys(remote.stdout) == localLocked)
            #expect(remote.stdout.contains("\"lock_holder\":\"another-host:4242:test\""), "\(remote.stdout)")

            let text = try await run(Products.queuectl, ["drain", "--socket", daemon.socket, "--wait"], in: scratch)
            #expect(text.stdout.contains("not run: another drainer holds the lock (another-host:4242:test)"))

            let unlocked = try await run("/usr/bin/sqlite3", [db, "DELETE FROM drain_lock"], in: scratch)
            try #require(unlocked.status == 0, "\(unlocked.stderr)")
            let delivered = try await run(
                Products.queuectl, ["drain", "--socket", daemon.socket, "--wait", "--json"], in: scratch)
            #expect(delivered.status == 0, "\(delivered.stdout) \(delivered.stderr)")
            let remoteKeys = try Self.keys(delivered.stdout)
            #expect(!remoteKeys.contains("lock_holder"))

            // The same pass locally, on a queue of its own (the daemon serves the first one).
            let other = scratch.file("other.db")
            try await enqueueEvents(3, db: other, in: scratch)
            let localDelivered = try await queuectl(
                ["drain", "--local", "--json", "--sink", "jsonl:" + scratch.file("local.jsonl")], db: other,
                in: scratch)
            #expect(localDelivered.status == 0, "\(localDelivered.stderr)")
            #expect(try Self.keys(localDelivered.stdout) == remoteKeys)
        }
    }
}
