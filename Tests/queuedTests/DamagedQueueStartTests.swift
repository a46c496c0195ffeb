import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `queued` refuses to start on a queue it must not or cannot use: a damaged file (exit 78), a read-only
/// filesystem, a missing directory, a file its user may not write (exit 73). One line says what and where,
/// and the file is byte for byte what it was, with no `-wal` or `-shm` left that was not there before.
@Suite(.serialized) struct DamagedQueueStartTests {
    @Test(arguments: QueueDamage.allCases)
    func aDamagedQueueIsRefusedWith78AndLeftAlone(_ kind: QueueDamage) async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await makeQueue(db, records: 2000, in: scratch)
        _ = try await damage(db, kind, records: 2000, in: scratch)
        let before = try FileFingerprint(db)
        let (status, log) = try await startAndWaitForExit(db: db, scratch: scratch)
        #expect(status == 78, "log:\n\(log)")
        let says = kind == .foreign ? "not an EventQueue file" : "is corrupt"
        expectOneErrorLine(log, naming: db, saying: says)
        #expect(try FileFingerprint(db) == before)
    }

    @Test func aMissingDirectoryIsRefusedWith73() async throws {
        let scratch = Scratch()
        let db = scratch.file("gone/q.db")
        let (status, log) = try await startAndWaitForExit(db: db, scratch: scratch)
        #expect(status == 73, "log:\n\(log)")
        expectOneErrorLine(
            log, naming: scratch.file("gone"), saying: "does not exist; create it or choose another --db")
        #expect(!FileManager.default.fileExists(atPath: scratch.file("gone")))
    }

    // Mounting needs root: CI runs as root; elsewhere this test is skipped.
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func aReadOnlyFilesystemIsRefusedWith73() async throws {
        try await withQueueOnTmpfs(records: 20) { tmpfs in
            let (scratch, mount, db) = (tmpfs.scratch, tmpfs.mount, tmpfs.db)
            try mount.remount(readOnly: true)
            let before = try FileFingerprint(db)
            let (status, log) = try await startAndWaitForExit(db: db, scratch: scratch)
            #expect(status == 73, "log:\n\(log)")
            expectOneErrorLine(log, naming: db, saying: "mounted read-only; remount it read-write")
            #expect(try FileFingerprint(db) == before)
        }
    }

    // Switching to nobody needs root: CI runs as root; elsewhere this test is skipped.
    @Test(.enabled(if: runningAsRoot, "running the daemon as nobody needs root"))
    func aQueueItsUserMayNotWriteIsRefusedWith73() async throws {
        let scratch = Scratch()
        chmod(scratch.path, 0o711)  // nobody may pass through to the queue directory
        let directory = scratch.file("queue")
        mkdir(directory, 0o755)
        let db = directory + "/q.db"
        try await makeQueue(db, records: 20, in: scratch)
        chmod(db, 0o644)
        let before = try FileFingerprint(db)
        let (status, log) = try await startAndWaitForExit(
            db: db, scratch: scratch,
            launcher: ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        #expect(status == 73, "log:\n\(log)")
        expectOneErrorLine(log, naming: db, saying: "may not read and write it (mode 0644, owner 0, group 0)")
        #expect(try FileFingerprint(db) == before)
    }

    func startAndWaitForExit(db: String, scratch: Scratch, launcher: [String] = []) async throws -> (Int32?, String) {
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, arguments: ["--sink", "null"], waitForReady: false, launcher: launcher)
        let status = await daemon.waitForExit(timeout: .seconds(30))
        await daemon.stop()
        return (status, daemon.log)
    }

    func expectOneErrorLine(_ log: String, naming path: String, saying message: String) {
        let errors = log.split(separator: "\n").filter { $0.contains("error") }
        #expect(errors.count == 1, "log:\n\(log)")
        #expect(errors.first?.hasPrefix("queued: error: ") == true, "log:\n\(log)")
        #expect(errors.first?.contains(path) == true, "log:\n\(log)")
        #expect(errors.first?.contains(message) == true, "log:\n\(log)")
    }
}
