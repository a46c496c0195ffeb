import EventQueue
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// File growth under load: a large backlog drained by the real `queued` while writer processes keep writing and
/// a monitor keeps reading. The `-wal` must stay bounded whatever the backlog (checkpoints are not starved, and
/// the post-drain vacuum runs in steps), and once the drain is over the main file must shrink and the `-wal` be
/// truncated. CI profile: 100,000 records; EVENTQUEUE_LONG_TESTS=1: 1,000,000.
@Suite(.serialized) struct WALGrowthTests {
    static let long = TestProfile.isLong
    static var backlog: Int { long ? 1_000_000 : 100_000 }
    /// The bound asserted on the `-wal`: SQLite's `journal_size_limit` as the queue sets it (32 MiB). The WAL
    /// autocheckpoints at 1,000 pages (4 MiB), so in practice it stays far below; see the printed maximum.
    static let walBound: Int64 = Int64(QueueOptions().journalSizeLimitBytes)

    /// File sizes sampled every 100 ms by a background task.
    final class Sampler: @unchecked Sendable {
        private let lock = NSLock()
        private var maxWAL: Int64 = 0
        private var maxDatabase: Int64 = 0
        private var running = true
        let path: String

        init(path: String) { self.path = path }

        static func size(_ path: String) -> Int64 {
            var info = stat()
            return stat(path, &info) == 0 ? Int64(info.st_size) : 0
        }

        func start() {
            Task.detached { [self] in
                while lock.withLock({ running }) {
                    let wal = Self.size(path + "-wal")
                    let database = Self.size(path)
                    lock.withLock {
                        maxWAL = max(maxWAL, wal)
                        maxDatabase = max(maxDatabase, database)
                    }
                    // The sampling rate of a measurement, not a synchronisation: nothing waits on this loop.
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }

        /// The maxima since the last reset.
        func take(reset: Bool = true) -> (wal: Int64, database: Int64) {
            lock.withLock {
                let result = (maxWAL, maxDatabase)
                if reset {
                    maxWAL = 0
                    maxDatabase = 0
                }
                return result
            }
        }

        func stop() { lock.withLock { running = false } }
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    @Test func theWALStaysBoundedWhileABacklogDrainsUnderWritersAndTheFileShrinksAfter() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let descriptorsBefore = Self.openDescriptors()
        let sampler = Sampler(path: db)
        sampler.start()
        defer { sampler.stop() }

        // The backlog, in batches of 5,000 records (one transaction each).
        let clock = ContinuousClock()
        let buildStart = clock.now
        let writer = try QueueWriter(path: db)
        var lastBacklogID: Int64 = 0
        for start in stride(from: 0, to: Self.backlog, by: 5_000) {
            let records = (start..<min(start + 5_000, Self.backlog)).map { index in
                Record.event(
                    "backlog", user: .externalID("u\(index % 1_000)"),
                    properties: ["mk": .string("b\(index)"), "song": .string("a song title of some length")])
            }
            lastBacklogID = try writer.enqueue(contentsOf: records).last ?? lastBacklogID
        }
        writer.close()
        let built = sampler.take()
        let buildTime = clock.now - buildStart

        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, arguments: ["--sink", "null", "--drain-interval", "1", "--log-level", "info"])
        BrazeFault.pumpNotifications(daemon)
        let stop = Flag()
        let drainStart = clock.now
        var written = 0
        var statusReads = 0
        var drain: (wal: Int64, database: Int64) = (0, 0)
        try await withDaemon(daemon) { daemon in
            daemon.signal(SIGUSR1)
            // Two writer processes at a time, 50 records per enqueue, and a monitor reading `queuectl status`,
            // for as long as the backlog drains.
            async let writers: Int = try await withThrowingTaskGroup(of: Int.self) { group in
                for writerIndex in 0..<2 {
                    group.addTask {
                        var count = 0
                        var round = 0
                        while !stop.isSet {
                            let lines = (0..<50).map { index in
                                #"{"type":"event","external_id":"w\#(index % 7)","name":"live","#
                                    + #""properties":{"mk":"w\#(writerIndex)r\#(round)n\#(index)"}}"#
                            }.joined(separator: "\n")
                            let result = try await queuectl(
                                ["enqueue", "--ndjson", "-"], db: db, stdin: lines, in: scratch)
                            guard result.status == 0 else {
                                throw ScratchError(message: "writer failed (\(result.status)): \(result.stderr)")
                            }
                            count += 50
                            round += 1
                        }
                        return count
                    }
                }
                var total = 0
                for try await count in group { total += count }
                return total
            }
            async let monitor: Int = try await { () async throws -> Int in
                var reads = 0
                while !stop.isSet {
                    _ = try await queuectl(["status", "--json"], db: db, in: scratch)
                    reads += 1
                    // A monitor's pace (an operator's `watch queuectl status`), not a synchronisation.
                    try await Task.sleep(for: .milliseconds(200))
                }
                return reads
            }()
            // Drained: no record of the backlog is left (writers keep adding their own).
            let drained =
                try await Wait.value(timeout: Self.long ? .seconds(3_600) : .seconds(300), every: .milliseconds(500)) {
                    () async throws -> Bool? in
                    let first = try await queuectl(["peek", "--json", "--limit", "1"], db: db, in: scratch)
                    let object = try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [[String: Any]]
                    let firstID = (object?.first?["id"] as? NSNumber)?.int64Value ?? Int64.max
                    return firstID > lastBacklogID ? true : nil
                } ?? false
            stop.set()
            written = try await writers
            statusReads = try await monitor
            drain = sampler.take()
            #expect(drained, "the backlog of \(Self.backlog) was not drained in time; log:\n\(daemon.log.suffix(2000))")
            daemon.signal(SIGUSR1)
            try await BrazeFault.waitUntilSettled(daemon, dead: 0, timeout: .seconds(120))
            // The pass after the writers stopped vacuums in steps and truncates the WAL.
            try await waitFor("the WAL truncated after the drain", timeout: .seconds(60)) {
                Sampler.size(db + "-wal") == 0
            }
        }
        let drainTime = clock.now - drainStart
        let after = sampler.take()
        let finalDatabase = Sampler.size(db)
        let peakDatabase = max(built.database, drain.database)
        #expect(written > 0 && statusReads > 0)
        #expect(drain.wal <= Self.walBound, "max WAL while draining: \(drain.wal) bytes")
        #expect(after.wal <= Self.walBound, "max WAL in the final pass: \(after.wal) bytes")
        #expect(finalDatabase * 10 < peakDatabase, "final \(finalDatabase) bytes vs peak \(peakDatabase)")
        #expect(Sampler.size(db + "-wal") == 0)
        // Thousands of processes were launched: none may leave a descriptor behind in this process.
        let descriptorsAfter = Self.openDescriptors()
        #expect(descriptorsAfter <= descriptorsBefore + 20, "fds: \(descriptorsBefore) -> \(descriptorsAfter)")
        print(
            "WALGrowth backlog \(Self.backlog): built in \(buildTime) (max WAL \(built.wal) B), drained with "
                + "\(written) records written meanwhile and \(statusReads) status reads in \(drainTime); "
                + "max WAL while draining \(drain.wal) B, in the final pass \(after.wal) B; "
                + "db peak \(peakDatabase) B, final \(finalDatabase) B; fds \(descriptorsBefore) -> \(descriptorsAfter)"
        )
    }
}
