import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Stopping in the middle of a pass, timers, and systemd socket activation.
@Suite struct ShutdownAndActivationTests {
    @Test func sigtermDuringAPassStopsClaimingAndReleasesNothingTwice() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        // Enough one-record batches (each one a claim, an fsync'd line and an ack) that the pass is still running
        // when the SIGTERM lands: it is sent as soon as the pass is seen delivering, not after a fixed sleep.
        let total = 5_000
        try await enqueueEvents(total, db: db, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--batch-size", "1"])
        try await withDaemon(daemon) { daemon in
            #expect(try await daemon.request("POST", "/launch").status == 202)
            try await waitFor("the pass to deliver 10 records", timeout: .seconds(60)) {
                (try? DeliveredLine.parse(file: daemon.sinkFile).count) ?? 0 >= 10
            }
            let status = await daemon.stop()
            #expect(status == 0, "log:\n\(daemon.log)")
        }
        #expect(!FileManager.default.fileExists(atPath: db + "-wal"))
        let delivered = try DeliveredLine.parse(file: daemon.sinkFile).map(\.id)
        #expect(Set(delivered).count == delivered.count, "no duplicates on a clean stop")
        let status = try await queuectl(["status", "--json"], db: db, in: scratch)
        let stats = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        #expect(stats["leased"] as? Int == 0, "no lease is left behind")
        #expect((stats["pending"] as? Int ?? -1) + delivered.count == total)
        #expect(delivered.count < total, "the pass stopped claiming before the end (log:\n\(daemon.log))")
    }

    @Test func drainIntervalLaunchesPasses() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--drain-interval", "0.2"])
        try await withDaemon(daemon) { daemon in
            try await enqueueEvents(3, db: db, in: scratch)
            _ = try await daemon.waitUntilIdle(passes: 2)
            try await waitFor("3 records delivered", timeout: .seconds(10)) {
                try DeliveredLine.parse(file: daemon.sinkFile).count >= 3
            }
            #expect(try DeliveredLine.parse(file: daemon.sinkFile).count == 3)
        }
    }

    /// What systemd does for a `.socket` unit: bind and listen, put the socket at fd 3, set `LISTEN_PID` and
    /// `LISTEN_FDS`, exec the service. (systemd-socket-activate closes the test runner's process-monitoring fd,
    /// which hangs Foundation's `Process`, so a few lines of Python stand in for it.)
    static let activator = """
        import os, socket, sys
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(sys.argv[1])
        listener.listen(16)
        if listener.fileno() != 3: os.dup2(listener.fileno(), 3)
        os.set_inheritable(3, True)
        env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
        os.execve(sys.argv[2], sys.argv[2:], env)
        """

    @Test func servesASocketPassedBySystemd() async throws {
        let python = "/usr/bin/python3"  // installed by scripts/setup; the storm tests need it too
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(2, db: db, in: scratch)
        let listen = scratch.file("activated.sock")
        let script = scratch.file("activate.py")
        _ = FileManager.default.createFile(atPath: script, contents: Data(Self.activator.utf8))
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, arguments: ["--drain-on-start"], launcher: [python, script, listen])
        try await withDaemon(daemon) { daemon in
            let result = try await run(
                "/usr/bin/curl",
                ["-s", "--max-time", "30", "--unix-socket", listen, "http://localhost/status"], in: scratch)
            #expect(result.stdout.contains(#""daemon":"#), "\(result.stdout) \(result.stderr) log:\n\(daemon.log)")
            #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the --socket path was not bound")
            #expect(await daemon.notify.waitFor { $0.contains("last pass all_delivered") } != nil)
        }
        #expect(try DeliveredLine.parse(file: daemon.sinkFile).count == 2)
    }
}
