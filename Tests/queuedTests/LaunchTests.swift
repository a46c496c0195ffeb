import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Every way a pass is launched, and what the client sees.
@Suite struct LaunchTests {
    @Test func sigusr1DeliversEverything() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(25, db: db, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--batch-size", "10"])
        try await withDaemon(daemon) { daemon in
            daemon.signal(SIGUSR1)
            let state = try await daemon.waitUntilIdle(passes: 1)
            let lastPass = try #require(state["last_pass"] as? [String: Any])
            #expect(lastPass["result"] as? String == "all_delivered")
            #expect(lastPass["delivered"] as? Int == 25)
        }
        let lines = try DeliveredLine.parse(file: daemon.sinkFile)
        #expect(lines.map(\.id) == Array(1...25))
    }

    @Test func queuectlDrainLaunchesAndReturns() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(5, db: db, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db)
        try await withDaemon(daemon) { daemon in
            let result = try await run(Products.queuectl, ["drain", "--socket", daemon.socket], in: scratch)
            #expect(result.status == 0, "\(result.stderr)")
            _ = try await daemon.waitUntilIdle(passes: 1)
            #expect(try DeliveredLine.parse(file: daemon.sinkFile).count == 5)
        }
    }

    @Test func queuectlDrainWaitReportsTheSummaryAndExitCode() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(5, db: db, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--batch-size", "2"])
        try await withDaemon(daemon) { daemon in
            let clean = try await run(Products.queuectl, ["drain", "--socket", daemon.socket, "--wait"], in: scratch)
            #expect(clean.status == 0, "\(clean.stderr)")
            #expect(clean.stdout == "delivered 5, retried 0, dead 0; now pending 0, leased 0, dead 0\n")
            #expect(clean.stderr.contains("batch 3: delivered 5"), "\(clean.stderr)")

            // A foreign writer's record that Braze would refuse goes dead: exit 10.
            try await enqueueEvents(1, db: db, prefix: "ok", in: scratch)
            let insert = try await run(
                "/usr/bin/sqlite3",
                [db, #"INSERT INTO records (kind, payload) VALUES ('event', '{"external_id":"f1","name":""}')"#],
                in: scratch)
            try #require(insert.status == 0, "\(insert.stderr)")
            let dead = try await run(
                Products.queuectl, ["drain", "--socket", daemon.socket, "--wait", "--json"], in: scratch)
            #expect(dead.status == 10, "\(dead.stdout) \(dead.stderr)")
            let summary = try #require(
                try JSONSerialization.jsonObject(with: Data(dead.stdout.utf8)) as? [String: Any])
            #expect(summary["result"] as? String == "some_dead")
            #expect(summary["delivered"] as? Int == 1)
            #expect(summary["dead"] as? Int == 1)
            #expect(summary["dead_total"] as? Int == 1)
        }
    }

    @Test func queuectlDrainWithoutDaemonExits69() async throws {
        let scratch = Scratch()
        let socket = scratch.file("nobody-here.sock")
        let result = try await run(Products.queuectl, ["drain", "--socket", socket, "--wait"], in: scratch)
        #expect(result.status == 69)
        #expect(
            result.stderr
                == "queuectl: error: no queued daemon listening on \(socket): start it, or drain in this process "
                + "with --local\n")
    }

    /// The wiring of coalescing: launches on the control socket are answered at once and a pass absorbs the
    /// launches that arrive while it runs. (Exactly one more pass is tested in-process, with a pass held open:
    /// `LaunchCoordinatorTests.manyLaunchesDuringAPassBecomeExactlyOneMorePass`.)
    @Test func launchesDuringAPassAreCoalesced() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(150, db: db, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--batch-size", "1"])
        try await withDaemon(daemon) { daemon in
            #expect(try await daemon.request("POST", "/launch").status == 202)
            // 20 launches while the first pass runs (150 single-record batches take a while).
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 { group.addTask { try await daemon.request("POST", "/launch").status } }
                for try await status in group { #expect(status == 202) }
            }
            // Then follow a pass, as `drain --wait` does: it is the next pass to start, so it runs after (or is)
            // the one the 20 launches left owed. When it ends, every launch has been served: no sleep needed.
            let followed = try await run(
                Products.queuectl, ["drain", "--socket", daemon.socket, "--wait"], in: scratch)
            #expect(followed.status == 0, "\(followed.stderr)")
            let state = try await daemon.waitUntilIdle(passes: 2)
            let passes = try #require(state["passes"] as? Int)
            // Exactly how many depends on how the 21 requests fall across the first passes (on a loaded machine
            // a pass may end between two of them); without coalescing it would be one pass per launch, 22.
            #expect(passes >= 2 && passes < 22, "21 launches, then one followed: \(passes) passes")
            #expect(try DeliveredLine.parse(file: daemon.sinkFile).count == 150)
        }
    }
}
