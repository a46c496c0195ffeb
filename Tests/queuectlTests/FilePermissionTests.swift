import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A queue the process cannot write: a read-only filesystem, a missing directory, a file or directory this user
/// may not write. Every refusal is one line naming the path and what to do, exit 73, and nothing is modified.
/// The daemon's side is in queuedTests/DamagedQueueStartTests. Mounting and switching users need root: CI runs
/// as root; elsewhere those tests are skipped.
@Suite(.serialized) struct FilePermissionTests {
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func aReadOnlyFilesystemIsNamedAndNothingChanges() async throws {
        try await withQueueOnTmpfs(records: 20) { tmpfs in
            let (scratch, mount, db) = (tmpfs.scratch, tmpfs.mount, tmpfs.db)
            try mount.remount(readOnly: true)
            let before = try FileFingerprint(db)
            for arguments in [
                ["enqueue", "event", "e", "--external-id", "u1"], ["enqueue", "--ndjson", "-"], ["status"],
                ["drain", "--local", "--sink", "null"],
            ] {
                let result = try await queuectl(arguments, db: db, stdin: numberedEvents(2), in: scratch)
                #expect(result.status == 73, "\(arguments): \(result.stderr)")
                expectOneLine(result, naming: db, saying: "mounted read-only; remount it read-write")
            }
            // A queue that does not exist yet cannot be created there either.
            let fresh = mount.file("new.db")
            let create = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: fresh, in: scratch)
            #expect(create.status == 73)
            expectOneLine(create, naming: fresh, saying: "read-only")
            #expect(!FileManager.default.fileExists(atPath: fresh))
            #expect(try FileFingerprint(db) == before)
        }
    }

    @Test func aMissingDirectoryIsNamed() async throws {
        let scratch = Scratch()
        let db = scratch.file("gone/q.db")
        for arguments in [["enqueue", "event", "e", "--external-id", "u1"], ["status"], ["check"]] {
            let result = try await queuectl(arguments, db: db, in: scratch)
            if arguments != ["enqueue", "event", "e", "--external-id", "u1"] {
                // Inspecting commands never create anything: no queue there is 66, "no queue at PATH".
                #expect(result.status == 66, "\(arguments): \(result.stderr)")
                expectOneLine(result, naming: db, saying: "no queue at \(db)")
                continue
            }
            #expect(result.status == 73, "\(arguments): \(result.stderr)")
            expectOneLine(
                result, naming: scratch.file("gone"), saying: "does not exist; create it or choose another --db")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("gone")))
    }

    struct Setup: CustomTestStringConvertible, Sendable {
        var name: String
        var directoryMode: mode_t
        var fileMode: mode_t
        var message: String
        var testDescription: String { name }
    }

    static let setups: [Setup] = [
        .init(
            name: "file readable, not writable", directoryMode: 0o755, fileMode: 0o644,
            message:
                "may not read and write it (mode 0644, owner 0, group 0); run as its owner or a member of its group"),
        .init(
            name: "file not readable", directoryMode: 0o755, fileMode: 0o660,
            message: "may not read and write it (mode 0660, owner 0, group 0)"),
        .init(
            name: "directory not writable", directoryMode: 0o755, fileMode: 0o666,
            message: "may not create files in"),
        .init(
            name: "directory not reachable", directoryMode: 0o700, fileMode: 0o666,
            message: "may not enter the directory"),
    ]

    @Test(.enabled(if: runningAsRoot, "running the client as nobody needs root"), arguments: setups)
    func aQueueThisUserMayNotWriteIsNamedAndNothingChanges(_ setup: Setup) async throws {
        let scratch = Scratch()
        chmod(scratch.path, 0o711)
        let directory = scratch.file("queue")
        mkdir(directory, 0o755)
        let db = directory + "/q.db"
        try await makeQueue(db, records: 20, in: scratch)
        chmod(db, setup.fileMode)
        chmod(directory, setup.directoryMode)
        let before = try FileFingerprint(db)
        for arguments in [["enqueue", "event", "e", "--external-id", "u1"], ["enqueue", "--ndjson", "-"], ["status"]] {
            let result = try await run(
                "/usr/bin/setpriv",
                ["--reuid=nobody", "--regid=nogroup", "--clear-groups", Products.queuectl] + arguments + ["--db", db],
                stdin: numberedEvents(2), in: scratch)
            #expect(result.status == 73, "\(setup.name) \(arguments): \(result.stderr)")
            expectOneLine(result, naming: db, saying: setup.message)
        }
        chmod(directory, 0o755)
        #expect(try FileFingerprint(db) == before)
    }

    func expectOneLine(_ result: ProcessResult, naming path: String, saying message: String) {
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("queuectl: error: "), "\(result.stderr)")
        #expect(result.stderr.contains(path), "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}
