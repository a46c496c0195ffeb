import Foundation
import Testing

@testable import EventQueue

/// Found by the simulated power cut (`PowerCutTests`, torn-sector disk model): a cut inside a checkpoint can tear
/// the main file's first sector while the WAL, synced before the checkpoint began, holds page 1 whole. SQLite reads
/// page 1 from the WAL and every record is there; `check` and `salvage` used to read the header themselves first
/// and call the file "not an SQLite database".
@Suite struct TornHeaderTests {
    let scratch = Scratch()

    @Test func aTornHeaderWithPageOneInTheWALIsCheckedAndSalvaged() throws {
        let db = scratch.file("q.db")
        let writer = try QueueWriter(path: db)
        defer { writer.close() }
        // Enough records to grow the file, so the last commits write page 1 (its page count) into the WAL.
        for index in 0..<300 { try writer.enqueue(event("e\(index)", user: "u\(index % 7)")) }
        // The files as a power cut leaves them: the main file and its WAL, no -shm, the header torn.
        let copy = scratch.file("cut.db")
        try FileManager.default.copyItem(atPath: db, toPath: copy)
        try FileManager.default.copyItem(atPath: db + "-wal", toPath: copy + "-wal")
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: copy))
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 512))
        try handle.close()

        let report = QueueCheck.run(path: copy)
        #expect(report.isHealthy, "\(report.problems)")
        let salvaged = scratch.file("salvaged.db")
        let salvage = try QueueSalvage.run(from: copy, to: salvaged)
        #expect(salvage.recoveredPending == 300 && salvage.unreadable == 0, "\(salvage)")
    }
}
