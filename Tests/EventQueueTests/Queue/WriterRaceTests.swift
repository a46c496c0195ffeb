import Foundation
import Synchronization
import Testing

@testable import EventQueue

/// Issue 13 item 13: a keyed enqueue that lost a race (its record purged between the insert that found the key
/// and the lookup of its id) failed with `.sqlite(code: 0)`, shown as exit 74 "I/O error". Both statements now
/// run in one transaction, so nothing can come between them.
@Suite struct WriterRaceTests {
    let directory = Scratch()
    var path: String { directory.file("q.db") }

    @Test func aKeyedEnqueueNeverLosesARaceWithAPurge() throws {
        let setup = try QueueWriter(path: path)
        setup.close()
        let stop = Atomic<Bool>(false)
        let path = self.path
        let purger = Thread {
            guard let raw = try? RawDatabase(path: path) else { return }
            while !stop.load(ordering: .relaxed) {
                try? raw.execute("DELETE FROM records WHERE idempotency_key = 'k'")
            }
        }
        purger.start()
        defer { stop.store(true, ordering: .relaxed) }
        let writer = try QueueWriter(path: path, options: QueueOptions(durability: .normal))
        defer { writer.close() }
        var failures: [String] = []
        let deadline = ContinuousClock.now + .seconds(3)
        var rounds = 0
        while ContinuousClock.now < deadline, rounds < 20_000 {
            rounds += 1
            do {
                _ = try writer.enqueue(event("e", user: "u1", key: "k"))
            } catch {
                if case .busy = error { continue }
                failures.append("\(error)")
                if failures.count > 3 { break }
            }
        }
        #expect(failures.isEmpty, "after \(rounds) rounds: \(failures)")
    }
}
