import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 22 #5: the jsonl sink's file was opened once, so after logrotate's `mv` records went on into the old file,
/// after an `rm` they were acked into a deleted file, and `kill -HUP` ended `queued` with 129, its socket left behind.
@Suite(.serialized) struct SinkRotationTests {
    /// The names (`name`) of the events in a jsonl file, in order.
    func names(in path: String) throws -> [String] {
        try DeliveredLine.parse(file: path).compactMap { $0.object["name"] as? String }
    }

    func drain(_ daemon: DaemonProcess, in scratch: Scratch) async throws {
        let drain = try await queuectl(["drain", "--wait", "--socket", daemon.socket], db: daemon.db, in: scratch)
        #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)")
    }

    @Test func sighupAfterAMoveReopensTheFileAndTheDaemonKeepsRunning() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await enqueueEvents(3, db: db, prefix: "before", in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db)
        let rotated = daemon.sinkFile + ".1"
        try await withDaemon(daemon) { daemon in
            try await drain(daemon, in: scratch)
            try FileManager.default.moveItem(atPath: daemon.sinkFile, toPath: rotated)
            daemon.signal(SIGHUP)
            let heard = await Wait.value(timeout: .seconds(10)) { () -> Bool? in
                if daemon.exited != nil { return false }
                return daemon.log.contains("SIGHUP: reopening") ? true : nil
            }
            #expect(heard == true, "exit \(String(describing: daemon.exited)); log:\n\(daemon.log.suffix(2000))")
            try await enqueueEvents(3, db: db, prefix: "after", in: scratch)
            try await drain(daemon, in: scratch)
            #expect(await daemon.stop() == 0, "SIGHUP did not end the daemon; SIGTERM still stops it cleanly")
        }
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket is removed at exit")
        #expect(try names(in: rotated) == ["before0", "before1", "before2"])
        #expect(try names(in: daemon.sinkFile) == ["after0", "after1", "after2"])
    }

    /// No signal at all: the path is compared with the open file before each batch.
    @Test(arguments: ["moved", "removed"])
    func aRotatedFileIsNoticedWithoutASignal(_ rotation: String) async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await enqueueEvents(3, db: db, prefix: "before", in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db)
        let rotated = daemon.sinkFile + ".1"
        try await withDaemon(daemon) { daemon in
            try await drain(daemon, in: scratch)
            if rotation == "moved" {
                try FileManager.default.moveItem(atPath: daemon.sinkFile, toPath: rotated)
            } else {
                try FileManager.default.removeItem(atPath: daemon.sinkFile)
            }
            try await enqueueEvents(3, db: db, prefix: "after", in: scratch)
            try await drain(daemon, in: scratch)
        }
        if rotation == "moved" { #expect(try names(in: rotated) == ["before0", "before1", "before2"]) }
        #expect(
            try names(in: daemon.sinkFile) == ["after0", "after1", "after2"],
            "acked records are in the file the path names, not in a \(rotation) one")
    }
}
