import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 13 items 6 and 8 through `queuectl`: two names of one queue file, and `--db file:...`.
@Suite struct QueuePathCLITests {
    /// `ln hl1.db hl2.db` then concurrent `--ndjson` enqueues through both names returned duplicate ids and
    /// corrupted the index. Now every call through either name is refused with 78 and the reason, and the file is
    /// left as it was.
    @Test func concurrentEnqueuesThroughTwoHardLinksAreRefused() async throws {
        let scratch = Scratch()
        let first = scratch.file("hl1.db")
        let second = scratch.file("hl2.db")
        try await makeQueue(first, records: 20, in: scratch)
        #expect(link(first, second) == 0)
        let before = try FileFingerprint(first)
        let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for index in 0..<8 {
                let db = index % 2 == 0 ? first : second
                group.addTask {
                    try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: numberedEvents(50), in: scratch)
                }
            }
            var all: [ProcessResult] = []
            for try await result in group { all.append(result) }
            return all
        }
        for result in results {
            #expect(result.status == 78, "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("it has 2 hard links"), "\(result.stderr)")
        }
        #expect(try FileFingerprint(first) == before)
        // check names the problem; salvage (read-only) copies the records out.
        let check = try await queuectl(["check"], db: first, in: scratch)
        #expect(check.status != 0 && check.stdout.contains("hard links"), "\(check.stdout)")
        let salvage = try await run(
            Products.queuectl, ["salvage", first, scratch.file("one.db")], in: scratch)
        #expect(salvage.status == 0 && salvage.stdout.contains("recovered 20 records"), "\(salvage.stdout)")
    }

    /// `--db file:e.db` is the file `file:e.db` in the working directory, not the SQLite URI for `e.db`.
    @Test func aFilePrefixIsPartOfTheFileName() async throws {
        let scratch = Scratch()
        let result = try await run(
            "/usr/bin/env",
            [
                "-C", scratch.path, Products.queuectl, "enqueue", "event", "e", "--external-id", "u1", "--db",
                "file:e.db",
            ],
            in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: scratch.file("file:e.db")))
        #expect(!FileManager.default.fileExists(atPath: scratch.file("e.db")))
        var info = stat()
        #expect(stat(scratch.file("file:e.db"), &info) == 0 && info.st_mode & 0o777 == 0o660)
    }
}
