import CPowerCutVFS
import Dispatch
import Foundation
import Synchronization

@testable import EventQueue

/// A simulated power cut under writers in line (docs/RELIABILITY.md, "Hardening V: a power cut, simulated").
///
/// One round: a queue file with its schema and no records; writer threads, each with its own `QueueWriter` (its own
/// connection and its own place in the `<queue>-turn` line), enqueue until the power goes; the shim
/// (`Tests/CPowerCutVFS`) cuts it at a random write, sync or truncation once enough enqueues returned, and gives the
/// files what a disk may keep; then the real `queuectl check` looks at the file and every record an enqueue
/// returned for is looked up. The writers never learn about the shim: they open with SQLite's default VFS, which
/// the shim is while a round runs.
enum PowerCut {
    /// What the disk keeps of what was written since the last sync (`pcvfs_loss`).
    enum Loss: Int, CaseIterable, Sendable, CustomStringConvertible {
        case loseAll, randomSectors, tornSectors

        var description: String {
            switch self {
            case .loseAll: "lose all unsynced"
            case .randomSectors: "random sectors kept"
            case .tornSectors: "random sectors kept or torn"
            }
        }

        var shim: pcvfs_loss {
            switch self {
            case .loseAll: PCVFS_LOSE_ALL
            case .randomSectors: PCVFS_RANDOM_SECTORS
            case .tornSectors: PCVFS_TORN_SECTORS
            }
        }
    }

    /// How writers write.
    enum Writes: Sendable {
        /// `enqueue(_:)`, one record per call: a third keyed (a transaction), the rest one INSERT in autocommit.
        case single
        /// 2–16 records per call, through `enqueue(contentsOf:)` or `batch(_:)` (half each).
        case batches
    }

    /// Which operations the countdown to the cut counts (`pcvfs_count`).
    enum CutPoint: Sendable, CustomStringConvertible {
        /// Every write, sync or truncation: the cut falls anywhere in the writers' commits, syncs and checkpoints.
        case anywhere
        /// The main file's only: the cut falls inside a checkpoint (the file written, not yet synced).
        case insideACheckpoint
        /// Every one after a checkpoint that copied the whole WAL: the cut falls while the WAL starts over.
        case afterACheckpoint

        var description: String {
            switch self {
            case .anywhere: "anywhere"
            case .insideACheckpoint: "inside a checkpoint"
            case .afterACheckpoint: "after a checkpoint"
            }
        }

        var shim: pcvfs_count {
            switch self {
            case .anywhere: PCVFS_COUNT_ALL
            case .insideACheckpoint: PCVFS_COUNT_MAIN
            case .afterACheckpoint: PCVFS_COUNT_AFTER_CHECKPOINT
            }
        }
    }

    struct Scenario: Sendable {
        var writers: Int
        var writes: Writes
        var durability: QueueOptions.Durability = .full
        /// Records returned before the cut is armed, and the operations counted after that until it.
        var warmup: ClosedRange<Int> = 0...400
        var countdown: ClosedRange<Int> = 1...300
        /// Where the countdown counts; a round takes one by its seed.
        var cutPoints: [CutPoint] = [.anywhere]
    }

    /// What one round found.
    struct Outcome: Sendable {
        var seed: UInt64
        var loss: Loss
        var cutPoint: CutPoint
        /// Records whose enqueue returned (to any writer, before or after the cut).
        var returned = 0
        /// Returned, and not in the file after the cut.
        var lost: [Int64] = []
        /// Returned, and in the file with another payload.
        var damaged: [Int64] = []
        /// Anything else wrong: `queuectl check`, a hole in the ids, a row nobody wrote, a writer's own error.
        var problems: [String] = []
        /// Rows in the file after the cut.
        var present = 0
        /// WAL syncs the writers did after handing the turn on (the deferred sync).
        var deferredSyncs = 0
        var shim = ShimFigures()

        var isClean: Bool { lost.isEmpty && damaged.isEmpty && problems.isEmpty }

        /// How to run this round again (the cut point and the loss replay; the threads' interleaving does not).
        var replay: String {
            "seed 0x\(String(seed, radix: 16)) (cut \(cutPoint), \(loss)); replay with "
                + "EVENTQUEUE_POWERCUT_SEED=0x\(String(seed, radix: 16)) EVENTQUEUE_POWERCUT_ROUNDS=1"
        }

        var summary: String {
            "\(replay): returned \(returned), present \(present), lost \(lost.count) \(lost.prefix(8)), damaged "
                + "\(damaged.count) \(damaged.prefix(8)), problems \(problems.prefix(5))"
        }
    }

    /// The shim's report (`pcvfs_report`), in Swift.
    struct ShimFigures: Sendable {
        var writes: UInt64 = 0
        var syncs: UInt64 = 0
        var cutByCountdown = false
        var syncsInterrupted: UInt64 = 0
        var sectorsUnsynced: UInt64 = 0
        var sectorsKept: UInt64 = 0
        var sectorsLost: UInt64 = 0
        var sectorsTorn: UInt64 = 0
        var filesLost: UInt64 = 0
        var bytesCutOff: UInt64 = 0
        /// Writes to the main file (checkpoints), and its sectors unsynced at the cut.
        var mainWrites: UInt64 = 0
        var mainSectorsUnsynced: UInt64 = 0

        init() {}

        init(_ report: pcvfs_report) {
            writes = report.writes
            syncs = report.syncs
            cutByCountdown = report.cut_by_countdown != 0
            syncsInterrupted = report.syncs_interrupted
            sectorsUnsynced = report.sectors_unsynced
            sectorsKept = report.sectors_kept
            sectorsLost = report.sectors_lost
            sectorsTorn = report.sectors_torn
            filesLost = report.files_lost
            bytesCutOff = report.bytes_cut_off
            mainWrites = report.main_writes
            mainSectorsUnsynced = report.main_sectors_unsynced
        }
    }

    /// Figures over many rounds, for the printed line and docs/RELIABILITY.md.
    struct Totals: CustomStringConvertible {
        var rounds = 0
        var returned = 0
        var lost = 0
        var damaged = 0
        var roundsWithLoss = 0
        var roundsWithProblems = 0
        var deferredSyncs = 0
        var sectorsUnsynced: UInt64 = 0
        var sectorsKept: UInt64 = 0
        var sectorsLost: UInt64 = 0
        var sectorsTorn: UInt64 = 0
        var filesLost: UInt64 = 0
        var syncsInterrupted: UInt64 = 0
        /// Rounds with a checkpoint before the cut, and rounds whose cut fell before a checkpoint's writes to the
        /// main file were synced.
        var roundsWithCheckpoints = 0
        var roundsCutInACheckpoint = 0
        var started = ContinuousClock.now

        mutating func add(_ outcome: Outcome) {
            rounds += 1
            returned += outcome.returned
            lost += outcome.lost.count
            damaged += outcome.damaged.count
            roundsWithLoss += outcome.lost.isEmpty && outcome.damaged.isEmpty ? 0 : 1
            roundsWithProblems += outcome.problems.isEmpty ? 0 : 1
            deferredSyncs += outcome.deferredSyncs
            sectorsUnsynced += outcome.shim.sectorsUnsynced
            sectorsKept += outcome.shim.sectorsKept
            sectorsLost += outcome.shim.sectorsLost
            sectorsTorn += outcome.shim.sectorsTorn
            filesLost += outcome.shim.filesLost
            syncsInterrupted += outcome.shim.syncsInterrupted
            roundsWithCheckpoints += outcome.shim.mainWrites > 0 ? 1 : 0
            roundsCutInACheckpoint += outcome.shim.mainSectorsUnsynced > 0 ? 1 : 0
        }

        var description: String {
            "\(rounds) rounds, \(returned) records returned, lost \(lost) (in \(roundsWithLoss) rounds), damaged "
                + "\(damaged), rounds with other problems \(roundsWithProblems); \(deferredSyncs) deferred WAL syncs; "
                + "at the cuts \(sectorsUnsynced) unsynced sectors (kept \(sectorsKept), lost \(sectorsLost), torn "
                + "\(sectorsTorn)), \(filesLost) files lost, \(syncsInterrupted) syncs interrupted; checkpoints in "
                + "\(roundsWithCheckpoints) rounds, cut inside one in \(roundsCutInACheckpoint); "
                + "\(ContinuousClock.now - started)"
        }
    }

    /// Registered once per process; it is SQLite's default VFS only while a round runs (`pcvfs_begin` to
    /// `pcvfs_finish`), and even then passes every call outside the round's directory through unchanged, so other
    /// tests in the process do not notice it.
    static let installed: Bool = pcvfs_install() == 0

    /// Ends a session that a failed test left running (nothing when none runs).
    static func endSession() {
        var report = pcvfs_report()
        _ = pcvfs_finish(PCVFS_LOSE_ALL, 0, &report)
    }

    /// Rounds to run: `EVENTQUEUE_POWERCUT_ROUNDS`, else `ci` or `long` by profile.
    static func rounds(ci: Int, long: Int) -> Int {
        Int(ProcessInfo.processInfo.environment["EVENTQUEUE_POWERCUT_ROUNDS"] ?? "") ?? (TestProfile.isLong ? long : ci)
    }

    /// The first round's seed: `EVENTQUEUE_POWERCUT_SEED` (decimal or 0x…), else a random one; round `n` uses
    /// this plus `n`, so a failed round's printed seed with one round replays it.
    static func firstSeed() -> UInt64 {
        let text = ProcessInfo.processInfo.environment["EVENTQUEUE_POWERCUT_SEED"] ?? ""
        if text.hasPrefix("0x"), let seed = UInt64(text.dropFirst(2), radix: 16) { return seed }
        return UInt64(text) ?? UInt64.random(in: 0...UInt64.max)
    }

    /// A queue file with the schema and no records, copied into every round's directory.
    static func makeTemplate(in scratch: Scratch) throws -> String {
        let path = scratch.file("template.db")
        try QueueWriter(path: path).close()
        return path
    }

    /// One round: writers, a cut, the loss, `queuectl check`, and every returned record looked up.
    static func round(_ scenario: Scenario, seed: UInt64, template: String) async throws -> Outcome {
        guard installed else { throw ScratchError(message: "the power-cut VFS could not be registered") }
        var random = SplitMix64(seed: seed)
        // Consecutive seeds go through every loss, and through every cut point for each loss.
        let losses = UInt64(Loss.allCases.count)
        var outcome = Outcome(
            seed: seed, loss: Loss.allCases[Int(seed % losses)],
            cutPoint: scenario.cutPoints[Int(seed / losses % UInt64(scenario.cutPoints.count))])
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try FileManager.default.copyItem(atPath: template, toPath: db)
        let trigger = CutTrigger(
            warmup: scenario.warmup.lowerBound + random.below(scenario.warmup.count),
            countdown: UInt64(scenario.countdown.lowerBound + random.below(scenario.countdown.count)),
            counting: outcome.cutPoint.shim)

        guard pcvfs_begin(scratch.path) == 0 else { throw ScratchError(message: "a power-cut session is running") }
        if trigger.warmup == 0 { trigger.arm() }
        let results = await writeUntilTheCut(scenario, db: db, seed: random.next(), trigger: trigger)
        var report = pcvfs_report()
        let finished = pcvfs_finish(outcome.loss.shim, random.next(), &report)
        outcome.shim = ShimFigures(report)
        if finished != 0 {
            outcome.problems.append(
                "the shim could not finish the cut (files still open \(report.files_still_open), errors "
                    + "\(report.finish_errors))")
            return outcome
        }
        if !outcome.shim.cutByCountdown { outcome.problems.append("the power was not cut by the countdown") }
        // The line's page (`<queue>-turn`) was never synced either: after a reboot it may hold anything, which the
        // line accepts; nothing at all is the simplest.
        unlink(db + "-turn")
        let kept = keepFilesAfterTheCut(db, seed: seed)

        var returned: [Int64: String] = [:]
        var attempted = Set<String>()
        for result in results {
            if let failure = result.failure { outcome.problems.append("writer: \(failure)") }
            outcome.deferredSyncs += result.deferredSyncs
            attempted.formUnion(result.attempted)
            for (id, payload) in result.returned where returned.updateValue(payload, forKey: id) != nil {
                outcome.problems.append("id \(id) was returned twice")
            }
        }
        outcome.returned = returned.count

        let check = try await queuectl(["check"], db: db, in: scratch)
        if check.status != 0 || !check.stdout.contains("integrity: ok") {
            outcome.problems.append("queuectl check: \(check)")
        }
        // SQLite's own verdict as well, through the WAL.
        let database = try RawDatabase(path: db)
        let integrity = try database.rows("PRAGMA integrity_check").map { $0.first ?? nil }
        if integrity != ["ok"] { outcome.problems.append("integrity_check: \(integrity.prefix(5))") }
        let rows = try database.rows("SELECT id, payload FROM records ORDER BY id")
        var stored: [Int64: String] = [:]
        for row in rows {
            guard row.count == 2, let idText = row[0], let id = Int64(idText), let payload = row[1] else {
                outcome.problems.append("unreadable row \(row)")
                continue
            }
            stored[id] = payload
            if !attempted.contains(payload) { outcome.problems.append("row \(id) holds a record no writer wrote") }
        }
        outcome.present = stored.count
        // Ids are given in commit order and a rolled-back transaction takes none (AUTOINCREMENT), and WAL recovery
        // keeps a prefix of the commits: whatever survived is ids 1...n, without a hole.
        if stored.keys.sorted() != Array(0..<Int64(stored.count)).map({ $0 + 1 }) {
            outcome.problems.append("the surviving ids are not 1...\(stored.count): \(stored.keys.sorted().prefix(20))")
        }
        for (id, payload) in returned.sorted(by: { $0.key < $1.key }) {
            switch stored[id] {
            case nil: outcome.lost.append(id)
            case payload: break
            default: outcome.damaged.append(id)
            }
        }
        if let kept, outcome.isClean { try? FileManager.default.removeItem(atPath: kept) }
        return outcome
    }

    /// With `EVENTQUEUE_POWERCUT_KEEP=DIR`, the files as the cut left them (before `queuectl check` or anything
    /// else opens them) are copied to `DIR/<seed>/`, and kept when the round finds something wrong.
    private static func keepFilesAfterTheCut(_ db: String, seed: UInt64) -> String? {
        guard let directory = ProcessInfo.processInfo.environment["EVENTQUEUE_POWERCUT_KEEP"] else { return nil }
        let kept = directory + "/" + String(seed, radix: 16)
        try? FileManager.default.createDirectory(atPath: kept, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] where access(db + suffix, F_OK) == 0 {
            try? FileManager.default.copyItem(atPath: db + suffix, toPath: kept + "/q.db" + suffix)
        }
        return kept
    }

    /// Arms the shim's countdown once `warmup` records have returned: the cut then falls at a random write, sync
    /// or truncation of whichever writer gets there, in the middle of their commits and syncs.
    final class CutTrigger: Sendable {
        let warmup: Int
        let countdown: UInt64
        let counting: pcvfs_count
        private let returned = Atomic<Int>(0)
        private let armed = Atomic<Bool>(false)

        init(warmup: Int, countdown: UInt64, counting: pcvfs_count) {
            self.warmup = warmup
            self.countdown = countdown
            self.counting = counting
        }

        func arm() {
            if armed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
                pcvfs_cut_after(countdown, counting)
            }
        }

        func recordsReturned(_ count: Int) {
            if returned.add(count, ordering: .relaxed).newValue >= warmup { arm() }
        }
    }

    /// What one writer thread did.
    struct WriterResult: Sendable {
        /// Id and payload (as the file stores it) of every record whose enqueue returned.
        var returned: [(Int64, String)] = []
        /// Payloads of every record it tried to enqueue, returned or not.
        var attempted: [String] = []
        var deferredSyncs = 0
        /// An error that was not the cut's.
        var failure: String?
    }

    /// Runs the writer threads until each has seen the cut; waits for them without blocking a cooperative thread.
    static func writeUntilTheCut(
        _ scenario: Scenario, db: String, seed: UInt64, trigger: CutTrigger
    ) async -> [WriterResult] {
        let results = Locked<[WriterResult]>([])
        let group = DispatchGroup()
        for thread in 0..<scenario.writers {
            group.enter()
            Thread.detachNewThread {
                let result = write(thread: thread, scenario, db: db, seed: seed, trigger: trigger)
                results.withLock { $0.append(result) }
                group.leave()
            }
        }
        await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume() }
        }
        return results.value
    }

    /// A writer thread would go on past this many records only if the cut never came.
    static let recordsWithoutACut = 20_000

    /// One writer thread: its own `QueueWriter`, enqueueing until an enqueue fails because the power is gone.
    static func write(
        thread: Int, _ scenario: Scenario, db: String, seed: UInt64, trigger: CutTrigger
    ) -> WriterResult {
        var result = WriterResult()
        var random = SplitMix64(seed: seed &+ UInt64(thread + 1) &* 0x9E37_79B9_7F4A_7C15)
        let writer: QueueWriter
        do {
            writer = try QueueWriter(path: db, options: QueueOptions(durability: scenario.durability))
        } catch {
            // The cut may come before a writer has even opened (a warmup of 0).
            if pcvfs_is_cut() == 0 { fail(&result, "opening: \(error)") }
            return result
        }
        var index = 0
        while true {
            let count = scenario.writes == .single ? 1 : 2 + random.below(15)
            let records = (index..<index + count).map { record(thread: thread, index: $0, random: &random) }
            index += count
            let payloads: [String]
            do {
                payloads = try records.map {
                    String(decoding: try RecordEncoder.encode($0, now: 0).payload, as: UTF8.self)
                }
            } catch {
                fail(&result, "encoding: \(error)")
                break
            }
            result.attempted.append(contentsOf: payloads)
            do {
                let ids: [Int64]
                let throughBatch = random.below(2) == 0
                switch scenario.writes {
                case .single:
                    ids = [try writer.enqueue(records[0])]
                case .batches where throughBatch:
                    ids = try writer.batch { batch in try records.map { try batch.enqueue($0).id } }
                case .batches:
                    ids = try writer.enqueue(contentsOf: records)
                }
                result.returned.append(contentsOf: zip(ids, payloads))
                trigger.recordsReturned(ids.count)
            } catch {
                if pcvfs_is_cut() == 0 { fail(&result, "enqueue \(index): \(error)") }
                break
            }
            if index > recordsWithoutACut {
                fail(&result, "no cut after \(index) records")
                break
            }
        }
        result.deferredSyncs = writer.file.connection.gate.walSyncs
        writer.close()
        return result
    }

    /// A writer's own failure ends the round for everyone: the power is cut so that the others stop too.
    private static func fail(_ result: inout WriterResult, _ message: String) {
        result.failure = message
        pcvfs_cut()
    }

    private static let letters = Array("abcdefghijklmnopqrstuvwxyz")

    /// A record of its own (thread and index), with an explicit time so that its stored payload is known in
    /// advance, and 0–1,500 bytes of padding in properties of at most 250 characters (Braze's limit is 255), so
    /// that commits span one page or several, and sectors are cut in different places.
    static func record(thread: Int, index: Int, random: inout SplitMix64) -> Record {
        var properties: JSONObject = ["thread": .string(String(thread)), "index": .string(String(index))]
        var padding = random.below(1_501)
        var part = 0
        while padding > 0 {
            let length = min(250, padding)
            properties["p\(part)"] = .string(String(repeating: letters[random.below(letters.count)], count: length))
            padding -= length
            part += 1
        }
        return Record.event(
            "power-cut", user: .externalID("user-\(thread)-\(random.below(4))"), properties: properties,
            time: "2026-01-01T00:00:00Z", idempotencyKey: random.below(3) == 0 ? "t\(thread)-\(index)" : nil)
    }
}
