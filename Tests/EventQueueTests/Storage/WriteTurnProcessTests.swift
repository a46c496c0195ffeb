import Foundation
import Testing

@testable import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

/// The writers' line between real processes: writer processes (`eventqueue-storm-writer`, the library loop) are
/// SIGKILLed at random points, most of them while waiting in line or holding the turn, while three others keep
/// writing. The kernel drops a dead writer's slot lock, the others pass over its ticket, and none of them stalls;
/// every record a writer was told was written is in the file, once.
@Suite(.serialized) struct WriteTurnProcessTests {
    @Test func writersKilledInLineHoldNobodyUp() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try QueueWriter(path: db).close()
        let stop = scratch.file("stop")
        var logs: [String] = []
        var steady: [ChildProcess] = []
        for index in 0..<3 {
            let log = scratch.file("steady-\(index).log")
            logs.append(log)
            steady.append(
                try ChildProcess(
                    Products.stormWriter, [db, log, "steady\(index)", "--users", "16", "--stop", stop],
                    logDirectory: scratch.path))
        }
        let until = ContinuousClock.now + .seconds(4)
        // Progress as the file shows it, every 10 ms: the longest time the newest id did not move.
        let sampler = Task { () -> Duration in
            let reader = try RawDatabase(path: db)
            var last = ""
            var lastMoved = ContinuousClock.now
            var longest = Duration.zero
            while ContinuousClock.now < until {
                let newest = (try? reader.scalar("SELECT max(id) FROM records")) ?? nil
                let now = ContinuousClock.now
                if let newest, newest != last {
                    last = newest
                    lastMoved = now
                }
                longest = max(longest, now - lastMoved)
                try await Task.sleep(for: .milliseconds(10))
            }
            return longest
        }
        var kills = 0
        var victim = 0
        while ContinuousClock.now < until - .milliseconds(300) {
            victim += 1
            let log = scratch.file("victim-\(victim).log")
            let child = try ChildProcess(
                Products.stormWriter, [db, log, "victim\(victim)", "--users", "16"], logDirectory: scratch.path)
            try await Task.sleep(for: .milliseconds(Int.random(in: 30...150)))
            child.signal(SIGKILL)
            if await child.exited() != 0 { kills += 1 }
            // On a busy machine a victim can be killed before it created its log: it confirmed nothing.
            if FileManager.default.fileExists(atPath: log) { logs.append(log) }
            child.removeOutput()
        }
        let longestStall = try await sampler.value
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        for writer in steady {
            #expect(await writer.exited() == 0, "a steady writer failed: \(writer.standardError)")
        }

        let history = try WriterHistory.read(logs: logs)
        let reader = try RawDatabase(path: db)
        let stored = try reader.rows("SELECT coalesce(user_idempotency_key, idempotency_key) FROM records")
            .compactMap { $0.first ?? nil }
        let keys = Set(stored)
        let missing = history.confirmed.keys.filter { !keys.contains($0) }
        let line = WriteLineReport.read(queuePath: db)
        print(
            "WriteTurnProcess: \(kills) writers killed, \(history.confirmed.count) records confirmed, "
                + "\(line.passedOver) dead waiters passed over, \(line.handoffs) turns, longest stall \(longestStall)")
        #expect(kills >= 10)
        #expect(missing.isEmpty, "confirmed but not in the file: \(missing.prefix(10))")
        #expect(stored.count == keys.count, "a record is in the file twice")
        #expect(line.passedOver >= 1, "no killed writer was ever passed over in line")
        // Recovery from a dead holder takes two 10 ms looks; the rest is a loaded 2-core machine's scheduling.
        #expect(longestStall < .seconds(1), "the writers stalled for \(longestStall)")
    }
}
