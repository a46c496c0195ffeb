import Foundation
import Testing

@testable import EventQueue

/// The library's own refusals: the free-space reserve on every enqueue path, and the integrity check on open.
@Suite struct OpenRefusalTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    @Test func theReserveRefusesABatchAndWritesNothing() throws {
        let seeded = try QueueWriter(path: path)
        try seeded.enqueue(event("kept", user: "u1"))
        seeded.close()
        let writer = try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: Int64.max))
        defer { writer.close() }
        #expect(throws: QueueError.self) {
            try writer.enqueue(contentsOf: [event("a", user: "u1"), event("b", user: "u2")])
        }
        do {
            try writer.enqueue(contentsOf: [event("a", user: "u1")])
            Issue.record("a writer below its free-space reserve must refuse the batch")
        } catch {
            guard case .diskFull(let failedPath, let detail) = error else {
                Issue.record("expected diskFull, got \(error)")
                return
            }
            #expect(failedPath == path)
            #expect(detail.contains("EVENTQUEUE_MIN_FREE_BYTES"))
        }
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT count(*) FROM records") == "1")
    }

    /// A damaged page a write never touches goes unnoticed by a plain open (writers, `queuectl enqueue` included,
    /// open in constant time); `verifyIntegrityOnOpen` (what the daemon sets at start) refuses the file before
    /// anything is written.
    @Test func verifyIntegrityOnOpenRefusesADamagedPageOthersMiss() throws {
        let writer = try QueueWriter(path: path)
        try writer.enqueue(contentsOf: (0..<2000).map { event("e\($0)", user: "u\($0 % 7)") })
        writer.close()
        let raw = try RawDatabase(path: path)
        let page = try #require(
            try raw.rows(
                "SELECT pageno FROM dbstat WHERE name = 'records' AND pagetype = 'leaf' ORDER BY pageno"
            ).compactMap { $0.first.flatMap { $0.flatMap { Int($0) } } }.dropFirst(3).first)
        let pageSize = Int(try raw.scalar("PRAGMA page_size") ?? "") ?? 4096
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64((page - 1) * pageSize + pageSize / 2 - 150))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 300))
        try handle.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))

        do {
            _ = try QueueWriter(path: path, options: QueueOptions(verifyIntegrityOnOpen: true))
            Issue.record("a damaged file must be refused")
        } catch {
            guard case .corrupt(let failedPath, let detail) = error else {
                Issue.record("expected corrupt, got \(error)")
                return
            }
            #expect(failedPath == path)
            #expect(detail.hasPrefix("quick_check: "))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}
