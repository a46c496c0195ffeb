import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The control socket admits members of its group by supplementary membership (`usermod -aG`), not only by
/// primary group: writers in a deployment join the writers' group that way.
@Suite struct PeerGroupTests {
    /// An arbitrary gid: the kernel needs no /etc/group entry to put it in a process's groups.
    static let writersGID: gid_t = 42_421

    /// Needs root, to run a client as nobody with setpriv and to chgrp the directory; CI runs as root.
    @Test(.enabled(if: getuid() == 0, "needs root to run a client as nobody (setpriv)"))
    func supplementaryGroupMembersMayLaunch() async throws {
        let scratch = Scratch()
        // A setgid directory of the writers' group, as the package's tmpfiles.d entry makes: the socket bound in
        // it gets that group, and the daemon's peer check compares against it.
        #expect(chown(scratch.path, 0, Self.writersGID) == 0)
        #expect(chmod(scratch.path, 0o2755) == 0)
        let daemon = try await DaemonProcess(scratch: scratch, db: scratch.file("queue.db"))
        try await withDaemon(daemon) { daemon in
            var info = stat()
            #expect(stat(daemon.socket, &info) == 0)
            #expect(info.st_gid == Self.writersGID, "the socket takes the setgid directory's group")
            let member = try await curlLaunch(socket: daemon.socket, groups: "\(Self.writersGID)", in: scratch)
            #expect(member.stdout == "202", "a supplementary member is refused: \(member.stdout) \(member.stderr)")
            // Loosen the mode so that a non-member can connect at all: the peer check must still refuse it.
            chmod(daemon.socket, 0o666)
            let outsider = try await curlLaunch(socket: daemon.socket, groups: "\(Self.writersGID + 1)", in: scratch)
            #expect(outsider.stdout == "403", "\(outsider.stdout) \(outsider.stderr)")
        }
    }

    /// Issue 39 #3: a writer may forget a user within the queue through the socket, but a Braze delete is refused
    /// (403, exit status 77 in the body) to anyone but root, the daemon's user and members of eventqueue-admins.
    @Test(.enabled(if: getuid() == 0, "needs root to run a client as nobody (setpriv)"))
    func aWriterMayNotAskTheDaemonForABrazeDelete() async throws {
        let scratch = Scratch()
        #expect(chown(scratch.path, 0, Self.writersGID) == 0)
        #expect(chmod(scratch.path, 0o2755) == 0)
        let daemon = try await DaemonProcess(scratch: scratch, db: scratch.file("queue.db"))
        try await withDaemon(daemon) { daemon in
            let refused = try await curl(
                socket: daemon.socket, path: "/forget?external_id=u1&braze_delete=true", in: scratch)
            #expect(refused.stdout.hasSuffix("403"), "\(refused.stdout) \(refused.stderr)")
            #expect(
                refused.stdout.contains("may not delete users at Braze") && refused.stdout.contains("eventqueue-admins")
            )
            #expect(refused.stdout.contains(#""exit_status":77"#), "\(refused.stdout)")
            let allowed = try await curl(socket: daemon.socket, path: "/forget?external_id=u1", in: scratch)
            #expect(allowed.stdout.hasSuffix("200"), "\(allowed.stdout) \(allowed.stderr)")
        }
    }

    private func curl(socket: String, path: String, in scratch: Scratch) async throws -> ProcessResult {
        try await run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--groups=\(Self.writersGID)", "/usr/bin/curl", "-s",
                "-w", "%{http_code}", "--unix-socket", socket, "-X", "POST", "http://localhost" + path,
            ], in: scratch)
    }

    private func curlLaunch(socket: String, groups: String, in scratch: Scratch) async throws -> ProcessResult {
        try await run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--groups=\(groups)", "/usr/bin/curl", "-s", "-o", "/dev/null",
                "-w", "%{http_code}", "--unix-socket", socket, "-X", "POST", "http://localhost/launch",
            ], in: scratch)
    }
}
