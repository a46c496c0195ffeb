import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The queue file is input from every writer in the group (issue 16): the daemon against rows and schema objects
/// that a foreign SQLite client planted. Serialized: each test runs a daemon.
@Suite(.serialized) struct HostileQueueFileTests {
    /// `sqlite3` with its CHECK constraints off, as a hostile writer would run it.
    func hostileSQL(_ db: String, _ sql: String, in scratch: Scratch) async throws {
        let result = try await run(
            "/usr/bin/sqlite3", [db, "PRAGMA ignore_check_constraints = ON; " + sql], in: scratch)
        #expect(result.status == 0, "sqlite3: \(result.stderr)")
    }

    /// Issue 16 defect 1: one row with attempts = 2^63-1 crashed `queued` (SIGILL at `attempts + 1` after a
    /// 500), in a loop. Now the row is dead-lettered at claim with the reason, the daemon keeps running, and the
    /// other records (one with attempts near the top of the range) are retried sanely: since issue 30 a 500 costs
    /// no attempt, so the one a single attempt from the maximum stays pending, its count untouched.
    @Test func attemptsAtTheTopOfInt64AreDeadLetteredNotACrash() async throws {
        var faults = FakeBrazeFaults()
        faults.serverErrorRate = 1.0
        try await BrazeScenario.run(records: MarkedRecord.make(3, users: 3), faults: faults) { scenario in
            let (db, records) = (scenario.db, scenario.records)
            try await hostileSQL(
                db, "UPDATE records SET attempts = 9223372036854775807 WHERE id = \(records[0].id);",
                in: scenario.scratch)
            try await hostileSQL(
                db, "UPDATE records SET attempts = 999999 WHERE id = \(records[1].id);", in: scenario.scratch)
            let daemon = try await scenario.startDaemon(arguments: ["--max-attempts", "1000000"])
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status != 132 && drain.stdout.contains("dead"), "\(drain.stdout) \(drain.stderr)")
                try await waitFor("the hostile row's dead letter, and the sink unavailable") {
                    let status = try await daemon.status()
                    let sink = (status["daemon"] as? [String: Any])?["sink"] as? [String: Any]
                    return status["dead"] as? Int == 1 && sink?["state"] as? String == "unavailable"
                }
                #expect(daemon.exited == nil, "the daemon must not crash: \(daemon.log.suffix(3000))")
            }
            #expect(!daemon.log.contains("arithmetic overflow"), "\(daemon.log.suffix(3000))")
            let dead = try await BrazeFault.deadLetters(db: scenario.db, in: scenario.scratch)
            #expect(
                dead[scenario.records[0].marker]?.contains("attempts 9223372036854775807 is out of range") == true,
                "\(dead)")
            #expect(dead.count == 1, "\(dead)")
            let live = try await BrazeFault.peek(db: scenario.db, in: scenario.scratch)
            let nearTheTop = live.first { ($0["id"] as? NSNumber)?.int64Value == scenario.records[1].id }
            #expect(nearTheTop?["attempts"] as? Int == 999_999, "a 500 spent an attempt: \(live)")
            // The hostile row was never sent; the others were tried (and answered 500).
            #expect(!BrazeFault.received(scenario.server).contains { $0.marker == scenario.records[0].marker })
            #expect((scenario.server.stats().byStatus[500] ?? 0) > 0, "\(scenario.server.stats())")
        }
    }

    /// Issue 22 #1: one 100 MB payload inserted with Python's `sqlite3` (checks off; before schema 6 the table
    /// allowed it) made `queued` read the whole row (a 200 MB one: 1.9 GB peak RSS, 12 s; OOM-killed under a 1 GiB
    /// limit on every start). Now its
    /// size is read from the row's header and it is dead-lettered unread: the daemon's peak RSS stays below the
    /// payload's size, the user's next record is delivered, every other record too.
    @Test func anOversizedRowIsDeadLetteredWithoutBeingRead() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await enqueueEvents(20, db: db, users: 4, prefix: "before", in: scratch)
        let megabytes = 100
        let python = try await run(
            "/usr/bin/python3",
            [
                "-c",
                """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1], isolation_level=None)
                # Since schema 6 the table refuses such a payload; an attacker turns the checks off.
                c.execute("PRAGMA ignore_check_constraints = ON")
                pad = "p" * (\(megabytes) * 1024 * 1024)
                c.execute("INSERT INTO records (kind, payload) VALUES ('event', ?)",
                          ('{"external_id":"u0","name":"huge","properties":{"pad":"%s"}}' % pad,))
                """, db,
            ], in: scratch)
        #expect(python.status == 0, "\(python.stderr)")
        try await enqueueEvents(4, db: db, users: 4, prefix: "after", in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db)
        var peakKilobytes = -1
        try await withDaemon(daemon) { daemon in
            let drain = try await queuectl(["drain", "--wait", "--socket", daemon.socket], db: db, in: scratch)
            #expect(drain.status == 10, "one dead letter: \(drain.stdout) \(drain.stderr)")
            #expect(drain.stdout.hasPrefix("delivered 24, retried 0, dead 1"), "\(drain.stdout)")
            peakKilobytes = Self.peakResidentKilobytes(of: daemon.pid) ?? -1
        }
        #expect(peakKilobytes > 0 && peakKilobytes < megabytes * 1024, "queued peaked at \(peakKilobytes) KB")
        let delivered = try DeliveredLine.parse(file: daemon.sinkFile).compactMap { $0.object["name"] as? String }
        #expect(Set(delivered) == Set((0..<20).map { "before\($0)" } + (0..<4).map { "after\($0)" }))
        let dead = try await queuectl(["dead", "list", "--json"], db: db, in: scratch)
        let letters = try JSONSerialization.jsonObject(with: Data(dead.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(letters.count == 1)
        let reason = letters.first?["last_error"] as? String ?? ""
        #expect(reason.contains("more than the 262144 a record can be") && reason.contains("never read"), "\(reason)")
        print("oversized row of \(megabytes) MiB: queued peak RSS \(peakKilobytes) KB; dead letter: \(reason)")
    }

    /// The process's peak resident set (`VmHWM` in /proc), in KB.
    static func peakResidentKilobytes(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }

    /// Issue 16 defect 3: a planted trigger (here one that cancels every ack) makes `queued` refuse to start,
    /// exit 78, with the `check` command in its one error line; nothing in the file changes.
    @Test func aPlantedTriggerKeepsTheDaemonFromStarting() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        _ = try await BrazeFault.enqueue(MarkedRecord.make(2, users: 2), db: db, in: scratch)
        try await hostileSQL(
            db, "CREATE TRIGGER evil BEFORE DELETE ON records BEGIN SELECT RAISE(IGNORE); END;", in: scratch)
        let before = try FileFingerprint(db)
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, arguments: ["--sink", "null"], waitForReady: false)
        let status = await daemon.waitForExit(timeout: .seconds(30))
        await daemon.stop()
        #expect(status == 78, "log:\n\(daemon.log)")
        let errors = daemon.log.split(separator: "\n").filter { $0.contains("error") }
        #expect(errors.count == 1 && errors.first?.hasPrefix("queued: error: ") == true, "\(daemon.log)")
        #expect(errors.first?.contains("trigger evil on records was not created by EventQueue") == true, "\(errors)")
        #expect(errors.first?.contains("queuectl check --db \(db)") == true, "\(errors)")
        #expect(try FileFingerprint(db) == before)
    }

    /// Issue 13 item 6: the daemon refuses a queue file with a second hard link (exit 78, with the reason).
    @Test func aHardLinkedQueueKeepsTheDaemonFromStarting() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        _ = try await BrazeFault.enqueue(MarkedRecord.make(2, users: 2), db: db, in: scratch)
        #expect(link(db, scratch.file("other.db")) == 0)
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, arguments: ["--sink", "null"], waitForReady: false)
        let status = await daemon.waitForExit(timeout: .seconds(30))
        await daemon.stop()
        #expect(status == 78, "log:\n\(daemon.log)")
        #expect(daemon.log.contains("it has 2 hard links"), "\(daemon.log)")
    }
}
