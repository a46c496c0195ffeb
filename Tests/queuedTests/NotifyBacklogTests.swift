import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// sd_notify must never block the daemon. `SystemdNotifier.send` is a blocking `sendto` on a datagram socket,
/// called inside the `LaunchCoordinator` actor after every pass; when the supervisor does not read fast enough,
/// the socket's queue (`net.unix.max_dgram_qlen`, 10 by default) fills and the send blocks: the actor is wedged,
/// `GET /status` never answers and SIGTERM cannot stop the daemon (found by BrazeFaultTests' two-daemon test,
/// where a rival retrying a held drain lock makes a pass, and a STATUS= datagram, every second).
@Suite struct NotifyBacklogTests {
    @Test func anUnreadNotifySocketNeverWedgesTheDaemon() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(1, db: db, in: scratch)
        // The listener is read once, for READY=1, and then never again (a stalled supervisor).
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--sink", "null"])
        var answered = 0
        var wedged = false
        for pass in 1...14 {
            daemon.signal(SIGUSR1)
            // Wait for this pass to finish, with a short deadline per status request (a wedged daemon answers
            // none: that ends the wait at once).
            let done = try await Wait.value(timeout: .seconds(5)) { () async throws -> Bool? in
                guard let state = try await Self.daemonState(daemon, timeout: 3) else { return false }
                return state.idle && state.passes >= pass ? true : nil
            }
            guard done == true else {
                wedged = true
                break
            }
            answered = pass
        }
        let stopped = await daemon.stop(timeout: .seconds(5))
        print("NotifyBacklog: \(answered) passes answered before the wedge (wedged: \(wedged)), exit \(stopped)")
        #expect(!wedged, "after \(answered) passes GET /status stopped answering (blocked sd_notify)")
        #expect(stopped == 0, "SIGTERM did not stop the daemon within 5 s (exit \(stopped))")
    }

    /// `GET /status` with a short deadline: `nil` when it does not answer in time.
    static func daemonState(_ daemon: DaemonProcess, timeout seconds: Int) async throws -> (idle: Bool, passes: Int)? {
        let result = try await run(
            "/usr/bin/curl",
            [
                "-s", "--max-time", "\(seconds)", "--unix-socket", daemon.socket, "http://localhost/status",
            ],
            in: daemon.scratch)
        guard result.status == 0,
            let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            let state = object["daemon"] as? [String: Any]
        else { return nil }
        return (state["state"] as? String == "idle", state["passes"] as? Int ?? 0)
    }
}
