import EventQueue
import EventQueueTestSupport
import Foundation
import Glibc
import Testing

@testable import EventQueueDelivery

/// The jsonl sink against its host (issue 22 #3 and #5): a disk that fills up mid-write, and a file that is
/// rotated (moved, removed) or reopened on request while the sink runs.
@Suite(.serialized) struct JSONLinesSinkHostTests {
    func record(_ id: Int64, padding: Int = 0) throws -> OutgoingRecord {
        let object = try #require(
            try JSONValue.parse(
                #"{"external_id":"u\#(id % 5)","name":"e\#(id)","pad":"\#(String(repeating: "p", count: padding))"}"#
            )
            .objectValue)
        return OutgoingRecord(
            id: id, kind: .event, object: object, userKey: "external_id:u\(id % 5)", createdAtMilliseconds: 0,
            attempts: 0)
    }

    /// The ids of the file's lines; every line must be a whole JSON object.
    func ids(in path: String) throws -> [Int64] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line in
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a line: \(line)")
            return try #require((object["id"] as? NSNumber)?.int64Value)
        }
    }

    /// Fills the filesystem of `directory` (a file written until ENOSPC), then frees `leaving` bytes of it.
    func fill(_ directory: String, leaving: Int) throws -> String {
        let filler = directory + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x78, count: 4096)
        var size = 0
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 { break }
            size += written
        }
        try #require(ftruncate(fd, off_t(max(0, size - leaving))) == 0)
        return filler
    }

    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func aShortWriteOnAFullDiskLeavesTheFileAsItWasAndCostsNoAttempt() async throws {
        let scratch = Scratch()
        let mount = try TmpfsMount(in: scratch, megabytes: 1)
        defer { mount.unmount() }
        let path = mount.file("delivered.jsonl")
        let sink = try JSONLinesSink(path: path)
        #expect(await sink.deliver([try record(1), try record(2)]).outcomes.values.allSatisfy { $0 == .delivered })
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        // One page free: the 40 KB batch's write is cut short after it (a fragment, before the fix).
        let filler = try fill(mount.path, leaving: 4096)
        let batch = try (3...42).map { try record($0, padding: 1000) }
        let report = await sink.deliver(batch)
        #expect(report.halt?.kind == .unavailable, "\(String(describing: report.halt))")
        let uncounted = report.outcomes.values.filter { outcome in
            guard case .retry(let reason, _, let cause) = outcome else { return false }
            return cause == .destination && reason.contains("No space left on device")
        }
        #expect(uncounted.count == batch.count, "a full disk is the host's problem: retried, no attempt counted")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the file is as it was before the write")
        // Space again: the retried batch follows the earlier lines, each record once, every line whole.
        try FileManager.default.removeItem(atPath: filler)
        #expect(await sink.deliver(batch).outcomes.values.allSatisfy { $0 == .delivered })
        #expect(try ids(in: path) == Array(1...42))
    }

    /// The drain loop with the sink on a full disk and `maxAttempts: 1`: before the fix every record went dead on
    /// its first failed write; now the pass stops with the records pending and their attempts unspent.
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func aFullDiskUnderTheSinkSpendsNoAttemptsAndLosesNothing() async throws {
        let scratch = Scratch()
        let mount = try TmpfsMount(in: scratch, megabytes: 1)
        defer { mount.unmount() }
        let queue = scratch.queuePath
        let enqueued = try enqueue(
            (0..<300).map { testEvent("e\($0)" + String(repeating: "p", count: 200), user: "u\($0 % 7)") }, at: queue)
        let path = mount.file("delivered.jsonl")
        let filler = try fill(mount.path, leaving: 0)
        let options = DrainOptions(batchSize: 50, maxAttempts: 1)
        let halted = try await drainOnce(try makeDrainer(queue, sink: try JSONLinesSink(path: path), options: options))
        #expect(halted.dead == 0 && halted.delivered == 0, "\(halted)")
        #expect(halted.halt?.kind == .unavailable)
        let live = try liveRecords(queue)
        #expect(live.count == 300 && live.values.allSatisfy { $0.attempts == 0 && $0.state != .dead })
        #expect(try deadRecords(queue).isEmpty)

        try FileManager.default.removeItem(atPath: filler)
        // Due again at once: no attempt was counted, so the first backoff step (well under a minute) applies.
        let later = ManualClock(wallMilliseconds: WallClock.nowMilliseconds() + 60_000)
        let drained = try await drainOnce(
            try makeDrainer(queue, sink: try JSONLinesSink(path: path), options: options, clock: later))
        #expect(drained.delivered == 300 && drained.dead == 0, "\(drained)")
        #expect(try ids(in: path) == enqueued)
    }

    @Test func aMovedFileIsFollowedByANewOneAtThePath() async throws {
        let scratch = Scratch()
        let path = scratch.file("delivered.jsonl")
        let sink = try JSONLinesSink(path: path)
        _ = await sink.deliver([try record(1)])
        try FileManager.default.moveItem(atPath: path, toPath: path + ".1")  // what logrotate does
        _ = await sink.deliver([try record(2)])
        #expect(try ids(in: path + ".1") == [1])
        #expect(try ids(in: path) == [2], "the next batch lands in a new file at the path")
    }

    @Test func aRemovedFileIsRecreatedNotWrittenIntoTheVoid() async throws {
        let scratch = Scratch()
        let path = scratch.file("delivered.jsonl")
        let sink = try JSONLinesSink(path: path)
        _ = await sink.deliver([try record(1)])
        try FileManager.default.removeItem(atPath: path)
        let report = await sink.deliver([try record(2)])
        #expect(report.outcomes[2] == .delivered)
        #expect(try ids(in: path) == [2], "a delivered record is in a file that exists")
    }
}
