import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// What the daemon exposes: the modes of the files it creates, and what it says about a Braze key it cannot use.
/// (The control socket's mode and peer check are in DaemonLifecycleTests and ControlSocketTests; the key on
/// 401s, 5xx, in status, metrics, logs and argv in BrazeFaultTests.)
@Suite struct SecurityTests {
    /// Under systemd's strict umask (077) the queue file, its `-wal` and its `-shm` are still 0660: the writers'
    /// group must be able to open them.
    @Test func queueFilesAreGroupSharedEvenUnderAStrictUmask() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, launcher: ["/bin/sh", "-c", #"umask 077; exec "$0" "$@""#])
        try await withDaemon(daemon) { daemon in
            try await enqueueEvents(5, db: db, in: scratch)
            daemon.signal(SIGUSR1)
            _ = try await daemon.waitUntilIdle(passes: 1)
            #expect(try DeliveredLine.parse(file: daemon.sinkFile).count == 5)
            for file in [db, db + "-wal", db + "-shm"] {
                var info = stat()
                #expect(stat(file, &info) == 0, "\(file) exists while the daemon has the queue open")
                #expect(info.st_mode & 0o777 == 0o660, "\(file): \(String(info.st_mode & 0o777, radix: 8))")
            }
        }
    }

    /// A key file the daemon cannot use stops it with exit 78 and a message that names the file and what is
    /// wrong, and never the file's content: not the key, not a part of it.
    @Test(arguments: ["space inside", "too large", "a directory", "empty", "world-readable", "a FIFO"])
    func aBadKeyFileIsRefusedWithoutEchoingTheKey(_ problem: String) async throws {
        let scratch = Scratch()
        let key = BrazeFault.makeKey()
        let keyFile = scratch.file("braze.key")
        let secrets: [String]
        switch problem {
        case "space inside":
            let halves = (String(key.prefix(20)), String(key.dropFirst(20)))
            try Data((halves.0 + " " + halves.1 + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
            secrets = [halves.0, halves.1]
        case "too large":
            try Data(String(repeating: key + "\n", count: 2_000).utf8).write(to: URL(fileURLWithPath: keyFile))
            secrets = [key]
        case "a directory":
            try FileManager.default.createDirectory(atPath: keyFile, withIntermediateDirectories: false)
            secrets = [key]
        case "world-readable":
            try Data((key + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
            chmod(keyFile, 0o644)
            secrets = [key]
        case "a FIFO":
            // Used to hang the start with no message (issue 13, item 4).
            mkfifo(keyFile, 0o600)
            secrets = [key]
        default:
            try Data(" \n\t\n".utf8).write(to: URL(fileURLWithPath: keyFile))
            secrets = [key]
        }
        // Each case fails for its own reason, not for the mode (files readable by others are refused).
        if problem != "world-readable" { chmod(keyFile, 0o600) }
        let daemon = try await DaemonProcess(
            scratch: scratch, db: scratch.file("queue.db"),
            arguments: ["--sink", "braze:http://127.0.0.1:9", "--api-key-file", keyFile],
            environment: ["BRAZE_API_KEY": key], waitForReady: false)
        let status = await daemon.waitForExit(timeout: .seconds(30))
        if status == nil { await daemon.stop() }
        #expect(status == 78, "\(problem): exit \(String(describing: status)); log:\n\(daemon.log)")
        let log = daemon.log
        #expect(log.contains(keyFile), "the message names the file: \(log)")
        for secret in secrets {
            #expect(!log.contains(secret), "\(problem): the key leaked: \(log)")
        }
        // The environment held a valid key too: a bad file is an error, never a silent fall-back to it.
        #expect(!log.contains("queued ready"), "\(log)")
    }
}
