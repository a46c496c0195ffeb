import Glibc
import Testing

@testable import EventQueue

/// A new queue file holds its schema in the main file, not in the WAL, so its sizes mean what they say.
@Suite struct FreshFileTests {
    @Test func theSchemaIsCheckpointedIntoTheNewFile() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        var wal = stat()
        var main = stat()
        #expect(stat(path, &main) == 0)
        // Before the fix: "file size: 4096 bytes (wal 53592 bytes)" for an empty queue.
        #expect(main.st_size > 4096, "the schema pages are in the file")
        #expect(stat(path + "-wal", &wal) != 0 || wal.st_size == 0, "the WAL is empty, was \(wal.st_size) bytes")
    }
}
