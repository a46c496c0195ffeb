import Foundation
import Testing
import EventQueueTestSupport

/// Issue 30 point 8, in real time: the real `queued` against a fake `/users/track` that goes down and comes back,
/// with writers writing and the app launching every 15 s. Before issue 30 a 184 s outage of 500s made every record
/// a dead letter, and 60 s after a recovery nothing had been delivered.
///
/// The three outages run at once (each its own daemon, fake, queue and writers; an outage leaves the two cores
/// mostly idle), so the suite costs the longest of them: about 4 minutes in CI. CI's outages are shorter than the
/// issue's but longer than what used to dead-letter (200 s of 500s against 184 s, 150 s refused as in the issue,
/// 90 s hanging); `EVENTQUEUE_LONG_TESTS=1` runs the 300 s of 500s and 150 s refused, and 180 s hanging.
/// `EVENTQUEUE_OUTAGE_SECONDS` sets the 500s' length by hand.
@Suite(.serialized) struct SinkOutageTests {
    @Test(.timeLimit(.minutes(15)))
    func outagesOf500sRefusedConnectionsAndAHangingSinkLoseNothingAndRecoverAtOnce() async throws {
        let long = TestProfile.isLong
        let runs = [
            OutageRun(
                kind: .serverErrors,
                seconds: TestProfile.seconds("EVENTQUEUE_OUTAGE_SECONDS", ci: 200, long: 300), restartMidOutage: true),
            OutageRun(kind: .connectionRefused, seconds: 150),
            OutageRun(kind: .hanging, seconds: long ? 180 : 90),
        ]
        let figures = try await withThrowingTaskGroup(of: OutageRun.Figures.self) { group in
            for run in runs { group.addTask { try await run.run() } }
            var all: [OutageRun.Figures] = []
            for try await figures in group { all.append(figures) }
            return all
        }
        for figure in figures { print("SinkOutage \(figure)") }
    }
}
