import CPowerCutVFS
import Foundation
import Testing

@testable import EventQueue

/// A power cut, simulated (issue 32; docs/RELIABILITY.md, "Hardening V: a power cut, simulated"): an enqueue that
/// returned is in the file after the power goes (every durable write commits with `NORMAL` and syncs the WAL after
/// handing the turn and the lock on), and the file passes `queuectl check`.
/// The shim (`Tests/CPowerCutVFS`) keeps what was written but not synced and throws it away at the cut (all of it,
/// or a random part of it, some of it torn). Each round prints nothing unless it fails; each test prints its
/// figures. `EVENTQUEUE_POWERCUT_ROUNDS` and `EVENTQUEUE_POWERCUT_SEED` choose the rounds and the first seed.
///
/// Serialized: the shim runs one session (one round's directory) at a time.
@Suite(.serialized) struct PowerCutTests {
    /// The model itself, without the library: a commit synced before the cut stays; one never synced goes when
    /// the disk keeps nothing unsynced; whatever the disk keeps, the file is sound. After the cut nothing reaches
    /// the files, not even the checkpoint the last connection's close would run.
    @Test(arguments: PowerCut.Loss.allCases)
    func theShimKeepsWhatWasSyncedAndDropsTheRest(loss: PowerCut.Loss) throws {
        try #require(PowerCut.installed)
        let scratch = Scratch()
        let path = scratch.file("plain.db")
        try RawDatabase(path: path).execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT)")
        try #require(pcvfs_begin(scratch.path) == 0)
        // Whatever fails below, the session ends (a no-op once it has): the next test needs its own.
        defer { PowerCut.endSession() }
        let files = { [path, path + "-wal"].map { FileManager.default.contents(atPath: $0) } }
        var atTheCut: [Data?] = []
        do {
            let db = try RawDatabase(path: path)
            try db.execute("PRAGMA synchronous = FULL; INSERT INTO t VALUES ('synced')")
            try db.execute("PRAGMA synchronous = OFF; INSERT INTO t VALUES ('never synced')")
            pcvfs_cut()
            atTheCut = files()
            #expect(throws: (any Error).self, "nothing gets past the cut") {
                try db.execute("INSERT INTO t VALUES ('after the cut')")
            }
        }
        #expect(files() == atTheCut, "closing after the cut changed the files")
        var report = pcvfs_report()
        #expect(pcvfs_finish(loss.shim, 7, &report) == 0)
        #expect(report.sectors_unsynced > 0, "the second commit was never synced")
        #expect(access(path + "-shm", F_OK) != 0, "the -shm is memory: gone after the cut")
        let rows = try RawDatabase(path: path).rows("SELECT x FROM t").map { $0.first ?? nil }
        #expect(rows.first == "synced")
        #expect(!rows.contains("after the cut"))
        if loss == .loseAll { #expect(rows == ["synced"]) }
        #expect(try RawDatabase(path: path).scalar("PRAGMA integrity_check") == "ok")
    }

    /// A file created in the session (here the WAL) and never synced has a name that never reached the disk
    /// either: the disk that keeps nothing unsynced loses the whole file; any disk leaves a sound database.
    @Test(arguments: PowerCut.Loss.allCases)
    func aFileNeverSyncedMayVanishWhole(loss: PowerCut.Loss) throws {
        try #require(PowerCut.installed)
        let scratch = Scratch()
        let path = scratch.file("plain.db")
        try RawDatabase(path: path).execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT)")
        #expect(access(path + "-wal", F_OK) != 0, "the last close removed the WAL")
        try #require(pcvfs_begin(scratch.path) == 0)
        // Whatever fails below, the session ends (a no-op once it has): the next test needs its own.
        defer { PowerCut.endSession() }
        do {
            let db = try RawDatabase(path: path)
            try db.execute("PRAGMA synchronous = OFF; INSERT INTO t VALUES ('never synced')")
            pcvfs_cut()
        }
        var report = pcvfs_report()
        #expect(pcvfs_finish(loss.shim, 11, &report) == 0)
        #expect(report.syncs == 0)
        if loss == .loseAll {
            #expect(report.files_lost == 1)
            #expect(access(path + "-wal", F_OK) != 0)
        }
        let db = try RawDatabase(path: path)
        #expect(try db.rows("SELECT x FROM t").allSatisfy { $0 == ["never synced"] })
        #expect(try db.scalar("PRAGMA integrity_check") == "ok")
    }

    /// The issue's test: writers waiting in line, every commit the deferred kind (`NORMAL`, the turn and the lock
    /// handed on, then the WAL synced), cut at a random write, sync or truncation after a random number of returned
    /// enqueues.
    @Test func everyEnqueueThatReturnedSurvivesAPowerCut() async throws {
        let totals = try await runRounds(
            PowerCut.Scenario(writers: 4, writes: .single), rounds: PowerCut.rounds(ci: 48, long: 1_000),
            name: "writers in line")
        #expect(totals.lost == 0 && totals.damaged == 0 && totals.roundsWithProblems == 0)
        #expect(totals.deferredSyncs > 0, "the writers synced the WAL after handing the turn on")
        #expect(totals.sectorsUnsynced > 0, "the cuts found data written and not yet synced")
    }

    /// A writer alone in line: nobody overlaps its sync, and the promise is the same.
    @Test func aLoneWritersEnqueuesSurviveAPowerCut() async throws {
        let totals = try await runRounds(
            PowerCut.Scenario(writers: 1, writes: .single), rounds: PowerCut.rounds(ci: 12, long: 200),
            name: "a lone writer")
        #expect(totals.lost == 0 && totals.damaged == 0 && totals.roundsWithProblems == 0)
        #expect(totals.deferredSyncs > 0, "the writer synced the WAL after its commits")
    }

    /// Checkpoints: a writer whose commit fills the WAL past 1,000 pages copies it into the main file (and syncs
    /// both) before its enqueue returns, and the next commit after a complete one starts the WAL over from its
    /// beginning, writing over frames already copied. Cut inside the copy, or just after it.
    @Test func enqueuesSurviveACutInsideOrJustAfterACheckpoint() async throws {
        var scenario = PowerCut.Scenario(writers: 4, writes: .single)
        scenario.warmup = 0...0
        scenario.countdown = 1...64
        scenario.cutPoints = [.insideACheckpoint, .afterACheckpoint]
        let totals = try await runRounds(scenario, rounds: PowerCut.rounds(ci: 18, long: 300), name: "checkpoints")
        #expect(totals.lost == 0 && totals.damaged == 0 && totals.roundsWithProblems == 0)
        #expect(totals.roundsCutInACheckpoint > 0, "some cuts fell before a checkpoint's writes were synced")
    }

    /// `enqueue(contentsOf:)` and `batch(_:)`: a batch that returned is there whole. A longer warmup: batches fill
    /// the WAL with fewer pages per record, and some rounds should reach a checkpoint.
    @Test func batchesThatReturnedSurviveAPowerCut() async throws {
        var scenario = PowerCut.Scenario(writers: 3, writes: .batches)
        scenario.warmup = 0...1_000
        let totals = try await runRounds(scenario, rounds: PowerCut.rounds(ci: 12, long: 300), name: "batches")
        #expect(totals.lost == 0 && totals.damaged == 0 && totals.roundsWithProblems == 0)
        #expect(totals.deferredSyncs > 0, "the writers synced the WAL after handing the turn on")
    }

    /// The test has teeth: with `durability: .normal` an enqueue that returned is not yet on disk, and the cut
    /// loses it. The checker must say so, and must still find the file sound (NORMAL loses the last commits, never
    /// the file's consistency). A warmup of at least 50 records, so that a round has returned enqueues to lose.
    @Test func withNormalDurabilityTheCheckerFindsReturnedEnqueuesLost() async throws {
        var scenario = PowerCut.Scenario(writers: 4, writes: .single, durability: .normal)
        scenario.warmup = 50...400
        let totals = try await runRounds(
            scenario, rounds: PowerCut.rounds(ci: 9, long: 60), name: "durability normal", expectingLoss: true)
        #expect(totals.lost > 0, "a cut loses enqueues that returned without a sync")
        #expect(totals.roundsWithLoss * 2 >= totals.rounds, "most rounds lose something: \(totals)")
        #expect(totals.damaged == 0 && totals.roundsWithProblems == 0)
        #expect(totals.deferredSyncs == 0, "NORMAL never syncs after the commit")
    }

    /// Runs `rounds` rounds from one seed, records each unexpected finding as an issue naming its seed, prints the
    /// figures.
    private func runRounds(
        _ scenario: PowerCut.Scenario, rounds: Int, name: String, expectingLoss: Bool = false
    ) async throws -> PowerCut.Totals {
        let templates = Scratch()
        let template = try PowerCut.makeTemplate(in: templates)
        let first = PowerCut.firstSeed()
        var totals = PowerCut.Totals()
        for round in 0..<rounds {
            let outcome = try await PowerCut.round(scenario, seed: first &+ UInt64(round), template: template)
            totals.add(outcome)
            let unexpected = expectingLoss ? !outcome.damaged.isEmpty || !outcome.problems.isEmpty : !outcome.isClean
            if unexpected { Issue.record("power cut, \(name), round \(round): \(outcome.summary)") }
        }
        print("PowerCut (\(name), first seed 0x\(String(first, radix: 16))): \(totals)")
        return totals
    }
}
