import Foundation
import Testing
import EventQueueTestSupport

/// A second daemon pointed at a live daemon's socket must not delete it (only a stale socket is replaced).
@Suite struct SocketTakeoverTests {
    @Test func aLiveSocketIsNeverReplaced() async throws {
        let scratch = Scratch()
        let first = try await DaemonProcess(scratch: scratch, db: scratch.file("a.db"))
        let second = try ChildProcess(
            Products.queued, ["--db", scratch.file("b.db"), "--socket", first.socket, "--sink", "null"],
            logDirectory: scratch.path)
        let (status, timedOut) = await second.exited(within: .seconds(20))
        #expect(!timedOut && status == 73, "\(second.standardError)")
        #expect(second.standardError.contains("another daemon is listening on it"))
        // The first daemon still answers on its socket.
        let (code, _) = try await first.request("GET", "/status")
        #expect(code == 200)
        #expect(await first.stop() == 0)
    }
}
