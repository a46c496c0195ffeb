import Foundation
import Testing

@testable import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 13 items 6 and 8: a `--db` path is a path to a regular file with one name, or to nothing; everything
/// else is refused before SQLite touches it, and every file EventQueue creates is 0660.
@Suite struct QueuePathTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    func expectRefused(_ path: String, saying words: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let writer = try QueueWriter(path: path)
            writer.close()
            Issue.record("\(path) must be refused", sourceLocation: sourceLocation)
        } catch {
            guard case .unsafeQueueFile(let refused, let reason) = error else {
                Issue.record("expected unsafeQueueFile, got \(error)", sourceLocation: sourceLocation)
                return
            }
            #expect(refused == path, sourceLocation: sourceLocation)
            #expect(reason.contains(words), "\(reason)", sourceLocation: sourceLocation)
        }
    }

    @Test func aDanglingSymlinkIsRefusedAndItsTargetNotCreated() throws {
        let target = directory.file("elsewhere.db")
        #expect(symlink(target, path) == 0)
        expectRefused(path, saying: "symbolic link to a missing file")
        #expect(access(target, F_OK) != 0)
    }

    @Test func aSymlinkToAQueueIsFollowed() throws {
        let target = directory.file("real.db")
        let writer = try QueueWriter(path: target)
        try writer.enqueue(event("a", user: "u1"))
        writer.close()
        #expect(symlink(target, path) == 0)
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        #expect(try consumer.admin.stats().pending == 1)
    }

    @Test func aDirectoryAFIFOAndDevicesAreRefused() throws {
        #expect(mkdir(path, 0o700) == 0)
        expectRefused(path, saying: "a directory, not a regular file")
        let fifo = directory.file("fifo.db")
        #expect(mkfifo(fifo, 0o600) == 0)
        // Opening a FIFO blocks until a writer comes: the check must not open it.
        expectRefused(fifo, saying: "a FIFO (named pipe), not a regular file")
        #expect(access(fifo + "-journal", F_OK) != 0)
        expectRefused("/dev/full", saying: "a character device")
        // As root SQLite used to leave /dev/full-journal (0666) behind.
        #expect(access("/dev/full-journal", F_OK) != 0)
        // `check` and `salvage` say so too, and do not hang on the FIFO.
        #expect(QueueCheck.run(path: fifo).problems.first?.contains("FIFO") == true)
        #expect(throws: QueueError.self) { try QueueSalvage.run(from: fifo, to: directory.file("new.db")) }
    }

    @Test func aSecondHardLinkIsRefusedForWritersAndConsumers() throws {
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("a", user: "u1"))
        writer.close()
        let other = directory.file("other.db")
        #expect(link(path, other) == 0)
        expectRefused(path, saying: "it has 2 hard links")
        expectRefused(other, saying: "it has 2 hard links")
        #expect(throws: QueueError.self) { try QueueConsumer(path: path) }
        let report = QueueCheck.run(path: path)
        #expect(report.problems.contains { $0.contains("hard links") }, "\(report.problems)")
        // Salvage reads it (read-only is safe), so the records can be moved out.
        let salvaged = try QueueSalvage.run(from: path, to: directory.file("new.db"))
        #expect(salvaged.recovered == 1)
    }

    /// `file:e.db` is a file named `file:e.db`, never an SQLite URI (Debian's SQLite has URI names on).
    @Test func aFilePrefixIsAFileName() {
        #expect(QueuePath.sqliteName(for: "file:e.db?mode=memory") == "./file:e.db?mode=memory")
        #expect(QueuePath.sqliteName(for: "/var/lib/q.db") == "/var/lib/q.db")
        #expect(QueuePath.sqliteName(for: "q.db") == "q.db")
    }

    /// Every file created for a queue is 0660, whatever the umask: the queue file and its -wal and -shm.
    @Test func createdFilesAre0660() throws {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        try writer.enqueue(event("a", user: "u1"))
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            #expect(stat(file, &info) == 0, "\(file)")
            #expect(info.st_mode & 0o777 == 0o660, "\(file): \(String(info.st_mode & 0o777, radix: 8))")
        }
    }

    /// A 0-byte file (what a foreign SQLite client leaves when it opens a missing queue and writes nothing) is
    /// treated like a missing queue: initialised, with its mode set to 0660 so the writers' group can use it.
    @Test func aZeroByteFileIsInitialisedWithMode0660() throws {
        let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        fchmod(fd, 0o644)
        close(fd)
        let writer = try QueueWriter(path: path)
        try writer.enqueue(event("a", user: "u1"))
        writer.close()
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o660)
        #expect(QueueCheck.run(path: path).isHealthy)
    }
}
