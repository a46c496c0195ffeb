import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The control socket under hostile clients and odd activations: a connection cap with idle timeouts (issue 13,
/// item 5), a parsed launch query (item 13), every activated socket served and anything but Unix stream sockets
/// refused (issue 16).
@Suite(.serialized) struct ControlHardeningTests {
    static func connect(_ path: String) -> CInt? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// True when the daemon closed its end (the socket reads EOF or an error).
    static func isClosedByPeer(_ descriptor: CInt, waitMilliseconds: Int32 = 0) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, waitMilliseconds) == 1 else { return false }
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
    }

    static func cpuTicks(_ pid: Int32) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    @Test func launchesWorkWhileIdleConnectionsExceedTheFileLimit() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(5, db: db, in: scratch)
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, launcher: ["/bin/sh", "-c", "ulimit -n 128 && exec \"$@\"", "sh"])
        try await withDaemon(daemon) { daemon in
            let before = Self.cpuTicks(daemon.pid)
            var idle: [CInt] = []
            defer { for descriptor in idle { close(descriptor) } }
            for _ in 0..<300 {
                if let descriptor = Self.connect(daemon.socket) { idle.append(descriptor) }
            }
            let drain = try await BrazeFault.drainAndWait(daemon, in: scratch)
            #expect(drain.status == 0, "a launch failed with 300 idle connections: \(drain.stdout) \(drain.stderr)")
            #expect(drain.stdout.hasPrefix("delivered 5"), "\(drain.stdout)")
            let closedAtOnce = idle.filter { Self.isClosedByPeer($0) }.count
            #expect(closedAtOnce >= idle.count - 64, "the cap of 64 did not hold: \(closedAtOnce) of \(idle.count)")
            // The rest are closed by the 10 s request timeout: wait for the event, at most 30 s.
            let deadline = ContinuousClock.now + .seconds(30)
            var open = idle.filter { !Self.isClosedByPeer($0) }
            while !open.isEmpty, ContinuousClock.now < deadline {
                open = open.filter { !Self.isClosedByPeer($0, waitMilliseconds: 500) }
            }
            #expect(open.isEmpty, "\(open.count) idle connections were never timed out")
            let ticks = Self.cpuTicks(daemon.pid) - before
            print(
                "ControlHardening: 300 idle connections under ulimit -n 128: launch ok, \(closedAtOnce) closed at "
                    + "once, the rest after the timeout; daemon CPU \(ticks) ticks")
        }
    }

    @Test func theLaunchQueryIsParsed() async throws {
        let scratch = Scratch()
        let daemon = try await DaemonProcess(scratch: scratch, db: scratch.file("queue.db"))
        try await withDaemon(daemon) { daemon in
            for junk in ["?nowait=true", "?wait=10", "?wait=yes", "?wait=true&wait=true", "?x=1"] {
                let (status, body) = try await daemon.request("POST", "/launch" + junk)
                #expect(status == 400, "\(junk): \(status) \(body)")
            }
            #expect(try await daemon.request("POST", "/launch?wait=false").status == 202)
            #expect(try await daemon.request("POST", "/launch").status == 202)
            let (status, body) = try await daemon.request("POST", "/launch?wait=1")
            #expect(status == 200 && body.contains(#""event":"summary""#), "\(status) \(body)")
        }
    }

    /// Binds what the script says at fds 3..., sets LISTEN_PID/LISTEN_FDS, execs the daemon.
    static let activator = """
        import os, socket, sys
        kinds = sys.argv[1].split(",")
        made = []
        for kind in kinds:
            if kind.startswith("unix:"):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(kind[5:]); s.listen(16)
            elif kind == "tcp":
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.bind(("127.0.0.1", 0)); s.listen(16)
            elif kind == "dgram":
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            else:
                s = open(kind, "w")
            made.append(s)
        for index, s in enumerate(made):
            os.dup2(s.fileno(), 3 + index)
            os.set_inheritable(3 + index, True)
        env = dict(os.environ, LISTEN_PID=str(os.getpid()), LISTEN_FDS=str(len(made)))
        os.execve(sys.argv[2], sys.argv[2:], env)
        """

    @Test func everyActivatedSocketIsServed() async throws {
        let python = "/usr/bin/python3"  // installed by scripts/setup; the storm tests need it too
        let scratch = Scratch()
        let script = scratch.file("activate.py")
        _ = FileManager.default.createFile(atPath: script, contents: Data(Self.activator.utf8))
        let first = scratch.file("first.sock")
        let second = scratch.file("second.sock")
        let daemon = try await DaemonProcess(
            scratch: scratch, db: scratch.file("queue.db"), launcher: [python, script, "unix:\(first),unix:\(second)"])
        try await withDaemon(daemon) { daemon in
            for path in [first, second] {
                let result = try await run(
                    "/usr/bin/curl", ["-s", "--max-time", "10", "--unix-socket", path, "http://localhost/status"],
                    in: scratch)
                #expect(result.stdout.contains(#""daemon":"#), "\(path): \(result.stdout) \(result.stderr)")
            }
        }
    }

    @Test(arguments: ["tcp", "dgram", "file"])
    func anythingButAUnixStreamSocketIsRefusedAtStart(kind: String) async throws {
        let python = "/usr/bin/python3"  // installed by scripts/setup; the storm tests need it too
        let scratch = Scratch()
        let script = scratch.file("activate.py")
        _ = FileManager.default.createFile(atPath: script, contents: Data(Self.activator.utf8))
        let good = "unix:" + scratch.file("good.sock")
        let passed = kind == "file" ? scratch.file("plain") : kind
        let daemon = try await DaemonProcess(
            scratch: scratch, db: scratch.file("queue.db"), waitForReady: false,
            launcher: [python, script, "\(good),\(passed)"])
        let status = await daemon.waitForExit(timeout: .seconds(20))
        await daemon.stop()
        #expect(status == 78, "\(kind): \(String(describing: status)); log:\n\(daemon.log)")
        let errors = daemon.log.split(separator: "\n").filter { $0.hasPrefix("queued: error:") }
        #expect(errors.count == 1, "\(daemon.log)")
        let expected =
            [
                "tcp": "fd 4 is not a Unix socket", "dgram": "fd 4 is not a stream socket",
                "file": "fd 4 is not a socket;",
            ][kind] ?? "?"
        #expect(errors.first?.contains(expected) == true, "\(errors)")
        let line = String(errors.first ?? "")
        let opening = line.filter { $0 == "(" }.count
        let closing = line.filter { $0 == ")" }.count
        #expect(opening == closing, "stray parenthesis: \(line)")
        #expect(!daemon.notify.messages.contains { $0.contains("READY=1") }, "reported ready")
    }
}
