import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `kill -9` of `queuectl enqueue --ndjson --one-transaction` while its one transaction is open (its `-wal` is
/// growing): the batch is all there or not at all, and the next writer and the daemon are not held up (the kernel
/// drops a dead process's locks; SQLite ignores the uncommitted frames it left in the WAL). Without
/// `--one-transaction` (issue 22 #4) the input is committed in chunks of 1,000: a kill leaves whole chunks, the
/// first lines of the input, never a part of one.
@Suite(.serialized) struct BulkWriterKillTests {
    /// WAL sizes at which the writer is killed: early in the transaction, in the middle, and late.
    static let killAtWALBytes: [Int] = [256 * 1024, 2 * 1024 * 1024, 8 * 1024 * 1024]
    static let batch = 60_000

    @Test(arguments: killAtWALBytes)
    func aKilledBulkWriterLeavesAllOrNothingAndBlocksNobody(_ walBytes: Int) async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await makeQueue(db, records: 10, in: scratch)
        let input = scratch.file("bulk.ndjson")
        try Data(numberedEvents(Self.batch, prefix: "bulk").utf8).write(to: URL(fileURLWithPath: input))

        let writer = try ChildProcess(
            Products.queuectl, ["enqueue", "--ndjson", input, "--one-transaction", "--db", db],
            logDirectory: scratch.path)
        // The WAL's size is looked at every 2 ms (it grows by about 1 MiB in 10 ms), until it reaches the mark or
        // the writer is gone (finished early, or failed: nothing left to kill).
        var walSeen = 0
        let reached = await Wait.value(timeout: .seconds(120), every: .milliseconds(2)) { () -> Bool? in
            walSeen = Self.size(of: db + "-wal")
            if walSeen >= walBytes { return true }
            return writer.hasExited ? false : nil
        }
        var killedAt = -1
        if reached == true {
            writer.signal(SIGKILL)
            killedAt = walSeen
        }
        let status = await writer.exited()
        #expect(killedAt >= walBytes, "the WAL never reached \(walBytes) bytes (\(walSeen)); writer exit \(status)")
        #expect(writer.terminatedBySignal, "the writer finished before the kill: \(writer.standardError)")

        // All or nothing: count the batch's markers.
        let started = ContinuousClock.now
        let after = try await queuectl(["enqueue", "event", "after", "--external-id", "u1"], db: db, in: scratch)
        let nextWriterTook = ContinuousClock.now - started
        #expect(after.status == 0, "\(after.stderr)")
        let bulk =
            Int(
                try await sqlite3(db, "SELECT count(*) FROM records WHERE payload LIKE '%\"bulk-%'", in: scratch)
                    .first ?? "") ?? -1
        #expect(bulk == 0 || bulk == Self.batch, "a partial batch: \(bulk) of \(Self.batch)")

        // The daemon starts, drains everything committed, and a drain through it exits 0.
        let daemon = try await DaemonProcess(scratch: scratch, db: db)
        try await withDaemon(daemon) { daemon in
            let drain = try await queuectl(["drain", "--wait", "--socket", daemon.socket], db: db, in: scratch)
            #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)\nlog:\n\(daemon.log)")
        }
        let delivered = try DeliveredLine.parse(file: daemon.sinkFile)
        #expect(delivered.count == 10 + bulk + 1)
        print(
            "bulk writer killed at \(killedAt) WAL bytes: \(bulk == 0 ? "none" : "all") of \(Self.batch) committed; "
                + "next enqueue took \(nextWriterTook)")
    }

    @Test func aKilledChunkedBulkWriterLeavesWholeChunksOfTheFirstLines() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await makeQueue(db, records: 10, in: scratch)
        let input = scratch.file("bulk.ndjson")
        try Data(numberedEvents(Self.batch, prefix: "bulk").utf8).write(to: URL(fileURLWithPath: input))
        let writer = try ChildProcess(
            Products.queuectl, ["enqueue", "--ndjson", input, "--db", db], logDirectory: scratch.path)
        // Killed once a few chunks are committed (what a reader sees), while it is still writing.
        let count = "SELECT count(*) FROM records WHERE payload LIKE '%\"bulk-%'"
        let midway = try await Wait.value(timeout: .seconds(120), every: .milliseconds(20)) {
            () async throws -> Bool? in
            if writer.hasExited { return false }
            return (Int(try await sqlite3(db, count, in: scratch).first ?? "") ?? 0) >= 3000 ? true : nil
        }
        writer.signal(SIGKILL)
        _ = await writer.exited()
        #expect(midway == true && writer.terminatedBySignal, "finished before the kill: \(writer.standardError)")
        let bulk = Int(try await sqlite3(db, count, in: scratch).first ?? "") ?? -1
        #expect(bulk > 0 && bulk < Self.batch && bulk % 1000 == 0, "not whole chunks: \(bulk)")
        // The first `bulk` lines, in order: the names are bulk-0 ... bulk-(n-1).
        let names = try await sqlite3(
            db, "SELECT json_extract(payload, '$.name') FROM records WHERE payload LIKE '%\"bulk-%' ORDER BY id",
            in: scratch)
        #expect(names == (0..<bulk).map { "bulk-\($0)" })
        let after = try await queuectl(["enqueue", "event", "after", "--external-id", "u1"], db: db, in: scratch)
        #expect(after.status == 0, "\(after.stderr)")
        print("chunked bulk writer killed: \(bulk) of \(Self.batch) committed, in whole chunks")
    }

    static func size(of path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}
