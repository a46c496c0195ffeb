import EventQueueTestSupport
import Foundation
import Testing

@testable import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// The socket's directory must be ours (issue 13, item 1). The two-user attack itself is in
/// `queuedTests/SocketTakeoverTests`; these are the rules, as one user.
@Suite struct SocketDirectoryTests {
    @Test func ourOwnPrivateDirectoryIsTrusted() throws {
        let directory = Scratch()
        #expect(SocketDirectory.problem(socketPath: directory.path + "/control.sock", trustedOwners: [getuid()]) == nil)
        // /tmp itself: root's, world-writable but sticky.
        #expect(SocketDirectory.problem(socketPath: "/tmp/x.sock", trustedOwners: [getuid()]) == nil)
    }

    @Test func aDirectoryWritableByOthersIsRefused() throws {
        let directory = Scratch()
        let inner = directory.path + "/eventqueue"
        mkdir(inner, 0o700)
        chmod(inner, 0o777)
        let problem = SocketDirectory.problem(socketPath: inner + "/control.sock", trustedOwners: [getuid()])
        #expect(problem?.contains("writable by every user") == true, "\(problem ?? "nil")")
        #expect(problem?.contains("chmod go-w") == true)
        chmod(inner, 0o1777)
        #expect(SocketDirectory.problem(socketPath: inner + "/control.sock", trustedOwners: [getuid()]) == nil)
    }

    @Test func aDirectoryOwnedBySomeoneElseIsRefused() throws {
        guard getuid() == 0 else {
            print("skipping: chown to another uid needs root")
            return
        }
        let directory = Scratch()
        let inner = directory.path + "/eventqueue"
        mkdir(inner, 0o700)
        chown(inner, 54_321, 54_321)
        let problem = SocketDirectory.problem(socketPath: inner + "/control.sock", trustedOwners: [getuid(), 1])
        #expect(problem?.contains("owned by uid 54321") == true, "\(problem ?? "nil")")
        let asOtherUser = SocketDirectory.problem(directory: inner, trustedOwners: [1000], trustedGroup: nil)
        #expect(asOtherUser?.contains("owned by uid 54321") == true, "\(asOtherUser ?? "nil")")
    }

    @Test func aSymbolicLinkMadeBySomeoneElseIsNotFollowed() throws {
        let directory = Scratch()
        let target = directory.path + "/target"
        mkdir(target, 0o700)
        let link = directory.path + "/link"
        symlink(target, link)
        // Ours: followed, and the target is checked.
        #expect(SocketDirectory.problem(socketPath: link + "/control.sock", trustedOwners: [getuid()]) == nil)
        chmod(target, 0o777)
        #expect(SocketDirectory.problem(socketPath: link + "/control.sock", trustedOwners: [getuid()]) != nil)
        chmod(target, 0o700)
        guard getuid() == 0 else { return }
        lchown(link, 54_321, 54_321)
        let problem = SocketDirectory.problem(socketPath: link + "/control.sock", trustedOwners: [1000])
        #expect(problem?.contains("symbolic link owned by uid 54321") == true, "\(problem ?? "nil")")
    }
}
