import Foundation
import Testing
import EventQueueTestSupport
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 13, item 1, as it happened: two real users, created here and removed at the end. The attacker prepares
/// `/tmp/eventqueue-$VICTIM_UID` before the victim's daemon starts, or listens there in its place. Before the
/// fix the victim's daemon bound its socket in the attacker's directory, and `queuectl drain --wait` printed the
/// attacker's `delivered 999`, exit 0.
@Suite(.serialized) struct SocketDirectoryTakeoverTests {
    struct Users {
        let victim: String
        let attacker: String
        let victimUID: uid_t
        let attackerUID: uid_t
        var victimBase: String { "/tmp/eventqueue-\(victimUID)" }
    }

    /// Runs `command` (argv) to completion, or SIGKILLs it after `timeout`: a daemon that should have refused to
    /// start must not hang the test, and one that should keep running is shown to have (`timedOut`).
    static func runCommand(_ command: [String], timeout: Duration? = nil, in scratch: Scratch) async throws
        -> ProcessResult
    {
        try await run(command[0], Array(command.dropFirst()), timeout: timeout, in: scratch)
    }

    /// `setpriv` to USER (exec, no fork: killing the pid kills the command; runuser forks and its child outlives
    /// it), then `env` without socket or runtime variables, then COMMAND.
    static func `as`(_ user: String, _ command: [String]) -> [String] {
        let entry = getpwnam(user)
        let uid = entry?.pointee.pw_uid ?? 65_534
        let gid = entry?.pointee.pw_gid ?? 65_534
        return [
            "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "/usr/bin/env", "-u",
            "XDG_RUNTIME_DIR", "-u", "EVENTQUEUE_SOCKET",
            "-u", "RUNTIME_DIRECTORY", "-u", "EVENTQUEUE_DB", "-u", "NOTIFY_SOCKET", "-u", "LISTEN_PID", "-u",
            "LISTEN_FDS",
        ] + command
    }

    static func withUsers(in scratch: Scratch, _ body: (Users) async throws -> Void) async throws {
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        let names = ["eqv" + suffix, "eqa" + suffix]
        var uids: [uid_t] = []
        defer {
            for name in names {
                _ = try? Process.run(URL(fileURLWithPath: "/usr/sbin/userdel"), arguments: [name]).waitUntilExit()
            }
        }
        for name in names {
            let made = try await Self.runCommand(
                ["/usr/sbin/useradd", "-M", "-s", "/usr/sbin/nologin", name], in: scratch)
            guard made.status == 0 else { throw ScratchError(message: "useradd \(name): \(made.output)") }
            guard let entry = getpwnam(name) else { throw ScratchError(message: "no passwd entry for \(name)") }
            uids.append(entry.pointee.pw_uid)
        }
        let users = Users(victim: names[0], attacker: names[1], victimUID: uids[0], attackerUID: uids[1])
        defer { try? FileManager.default.removeItem(atPath: users.victimBase) }
        try await body(users)
    }

    /// A fake daemon that answers every request with a made-up summary, as the attacker ran.
    static let impostor = """
        import os, socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(8)
        body = b'{"event":"summary","result":"all_delivered","delivered":999,"retried":0,"dead":0,"pending":0,"leased":0,"dead_total":0}\\n'
        while True:
            c, _ = s.accept()
            c.recv(65536)
            c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/x-ndjson\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n" % len(body) + body)
            c.close()
        """

    @Test(.enabled(if: runningAsRoot, "creating two users needs root"))
    func anotherUsersDirectoryOrSocketIsNeverTrusted() async throws {
        let python = "/usr/bin/python3"  // installed by scripts/setup; the storm tests need it too
        let scratch = Scratch()
        chmod(scratch.path, 0o755)
        try await Self.withUsers(in: scratch) { users in
            let home = scratch.file("victim")
            mkdir(home, 0o700)
            chown(home, users.victimUID, gid_t(getpwnam(users.victim).pointee.pw_gid))
            let db = home + "/queue.db"
            let enqueue = try await Self.runCommand(
                Self.as(users.victim, [Products.queuectl, "enqueue", "event", "e", "--external-id", "u", "--db", db]),
                in: scratch)
            #expect(enqueue.status == 0, "\(enqueue.output)")
            let daemon = Self.as(users.victim, [Products.queued, "--db", db, "--sink", "null"])

            // 1. The attacker pre-creates the victim's default directory, mode 0777.
            let made = try await Self.runCommand(
                Self.as(
                    users.attacker,
                    [
                        "/bin/sh", "-c",
                        "mkdir -p -m 0777 \(users.victimBase)/eventqueue && chmod 0777 \(users.victimBase)",
                    ]),
                in: scratch)
            #expect(made.status == 0, "\(made.output)")
            let refused = try await Self.runCommand(daemon, timeout: .seconds(20), in: scratch)
            #expect(refused.status == 73, "the daemon used the attacker's directory: \(refused)")
            #expect(refused.output.contains("owned by uid \(users.attackerUID)"), "\(refused.output)")
            #expect(!FileManager.default.fileExists(atPath: users.victimBase + "/eventqueue/control.sock"))

            // 2. The attacker listens there in the daemon's place: the victim's client refuses to believe it.
            let script = scratch.file("impostor.py")
            _ = FileManager.default.createFile(atPath: script, contents: Data(Self.impostor.utf8))
            chmod(script, 0o644)
            for socketPath in [
                users.victimBase + "/eventqueue/control.sock", "/tmp/eq-impostor-\(users.attacker).sock",
            ] {
                let command = Self.as(users.attacker, [python, script, socketPath])
                let impostor = try ChildProcess(command[0], Array(command.dropFirst()), logDirectory: scratch.path)
                defer {
                    impostor.signal(SIGKILL)
                    unlink(socketPath)
                }
                try await waitFor("the impostor's socket") {
                    FileManager.default.fileExists(atPath: socketPath)
                }
                var drainCommand = [Products.queuectl, "drain", "--wait", "--db", db]
                if !socketPath.hasPrefix(users.victimBase) { drainCommand += ["--socket", socketPath] }
                let drain = try await Self.runCommand(Self.as(users.victim, drainCommand), in: scratch)
                #expect(drain.status == 77, "\(socketPath): the impostor was believed: \(drain)")
                #expect(!drain.output.contains("delivered 999"), "\(drain.output)")
                #expect(drain.output.contains("uid \(users.attackerUID)"), "\(drain.output)")
            }

            // 3. A symbolic link the attacker made, pointing at a directory of theirs, is not followed.
            try? FileManager.default.removeItem(atPath: users.victimBase)
            let attackerHome = scratch.file("attacker")
            mkdir(attackerHome, 0o777)
            chown(attackerHome, users.attackerUID, gid_t(getpwnam(users.attacker).pointee.pw_gid))
            let linked = try await Self.runCommand(
                Self.as(users.attacker, ["/bin/ln", "-s", attackerHome, users.victimBase]), in: scratch)
            #expect(linked.status == 0, "\(linked.output)")
            let notFollowed = try await Self.runCommand(daemon, timeout: .seconds(20), in: scratch)
            #expect(notFollowed.status == 73, "the daemon followed the attacker's link: \(notFollowed)")
            #expect(
                notFollowed.output.contains("symbolic link owned by uid \(users.attackerUID)"), "\(notFollowed.output)")
            #expect(!FileManager.default.fileExists(atPath: attackerHome + "/eventqueue/control.sock"))
            try? FileManager.default.removeItem(atPath: users.victimBase)

            // 4. Without the attacker, the victim's own default directory works.
            let started = try await Self.runCommand(daemon, timeout: .seconds(10), in: scratch)
            #expect(started.timedOut, "the daemon should have kept running: \(started)")
            #expect(started.output.contains("queued ready"), "\(started.output)")
        }
    }
}
