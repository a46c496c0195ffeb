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

    private func curlLaunch(socket: String, groups: String, in scratch: Scratch) async throws -> ProcessResult {
        try await run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=nogroup", "--groups=\(groups)", "/usr/bin/curl", "-s", "-o", "/dev/null",
                "-w", "%{http_code}", "--unix-socket", socket, "-X", "POST", "http://localhost/launch",
            ], in: scratch)
    }
}
