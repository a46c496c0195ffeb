import EventQueue
import EventQueueTestSupport
import Foundation
import Testing

/// `kill -9` at random moments while writers keep enqueueing: after a restart every record that was not acked is
/// delivered; nothing is lost; duplicates are bounded by one batch per kill; a clean SIGTERM adds none.
@Suite(.serialized) struct CrashTests {
    /// EVENTQUEUE_CRASH_KILLS sets the number of kills (CI profile: 20).
    static let kills = Int(ProcessInfo.processInfo.environment["EVENTQUEUE_CRASH_KILLS"] ?? "") ?? 20
    static let batchSize = 10

    @Test func sigkillAtRandomMomentsLosesNothing() async throws {
        let report = try await runChaos(kills: Self.kills, signal: SIGKILL)
        #expect(report.lost.isEmpty, "\(report)")
        #expect(report.unexpected.isEmpty, "\(report)")
        #expect(report.reordered.isEmpty, "\(report)")
        #expect(report.duplicateDeliveries <= Self.kills * Self.batchSize, "\(report)")
        print("crash test (\(Self.kills) x SIGKILL): \(report)")
    }

    @Test func sigtermStopsCleanlyWithoutDuplicates() async throws {
        let report = try await runChaos(kills: max(5, Self.kills / 4), signal: SIGTERM)
        #expect(report.lost.isEmpty, "\(report)")
        #expect(report.unexpected.isEmpty, "\(report)")
        #expect(report.reordered.isEmpty, "\(report)")
        #expect(report.duplicated.isEmpty, "\(report)")
        print("clean-stop test: \(report)")
    }

    /// Writers enqueue continuously; the daemon is started, left to drain for a random moment, and signalled,
    /// `kills` times; then a final daemon drains the rest and the history is checked.
    private func runChaos(kills: Int, signal: Int32) async throws -> HistoryChecker.Report {
        let workspace = Scratch()
        let db = workspace.file("queue.db")
        let out = workspace.file("delivered.jsonl")
        let stop = workspace.file("stop-writers")
        try QueueWriter(path: db).close()  // status and check never create a queue

        var writers: [ChildProcess] = []
        for writer in 0..<3 {
            let log = workspace.file("writer-\(writer).log")
            let script = """
                i=0
                while [ ! -e "\(stop)" ]; do
                  i=$((i + 1))
                  if "\(Products.queuectl)" enqueue event tick --prop marker=w\(writer)-$i \
                       --external-id user-$((i % 4)) --db "\(db)" >/dev/null 2>>"\(log).err"; then
                    echo "w\(writer)-$i" >> "\(log)"
                  fi
                  sleep 0.0$((RANDOM % 5))
                done
                """
            writers.append(try ChildProcess("/bin/bash", ["-c", script], logDirectory: workspace.path))
        }

        let arguments = [
            "--db", db, "--sink", "jsonl:\(out)", "--socket", workspace.file("control.sock"), "--drain-on-start",
            "--drain-interval", "0.2", "--lease-seconds", "2", "--batch-size", String(Self.batchSize),
        ]
        for cycle in 0..<kills {
            // SIGKILL may land anywhere, even before the daemon is up. A SIGTERM is sent once the daemon said
            // READY=1: before its handlers exist, SIGTERM's default action ends it like a SIGKILL would.
            let notify = try NotifyListener(path: workspace.file("notify-\(cycle).sock"))
            let daemon = try ChildProcess(
                Products.queued, arguments, environment: ["NOTIFY_SOCKET": notify.path],
                logDirectory: workspace.path)
            let ready =
                signal == SIGTERM
                ? await notify.waitFor { $0.split(separator: "\n").contains("READY=1") } : "(not awaited)"
            #expect(ready != nil, "no READY=1: \(daemon.standardError.suffix(500))")
            // The random moment is the point of the test (a kill anywhere in a pass), not a wait for something.
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...900)))
            daemon.signal(signal)
            let (status, timedOut) = await daemon.exited(within: .seconds(20))
            // A SIGTERM is a clean stop (0); a SIGKILL ends it by the signal (Foundation reports its number).
            let expected = signal == SIGTERM ? 0 : SIGKILL
            #expect(
                !timedOut && status == expected,
                "signal \(signal): status \(status): \(daemon.standardError.suffix(500))")
        }
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        for writer in writers { _ = await writer.exited(within: .seconds(30)) }

        // A final daemon drains what is left; then a clean stop.
        let final = try ChildProcess(Products.queued, arguments, logDirectory: workspace.path)
        var remaining = Int.max
        let drained = try await Wait.value(timeout: .seconds(60), every: .milliseconds(200)) { () throws -> Bool? in
            let consumer = try QueueConsumer(path: db, options: QueueOptions(minimumFreeBytes: 0))
            defer { consumer.close() }
            let stats = try consumer.admin.stats()
            remaining = stats.pending + stats.leased
            return remaining == 0 ? true : nil
        }
        #expect(drained == true, "the restarted daemon should deliver everything within a minute: \(remaining) left")
        final.signal(SIGTERM)
        let (finalStatus, _) = await final.exited(within: .seconds(20))
        #expect(finalStatus == 0, "\(final.standardError.suffix(500))")
        #expect(!FileManager.default.fileExists(atPath: db + "-wal"), "a clean stop leaves no -wal file")

        var enqueued: Set<String> = []
        for writer in 0..<3 {
            let text = (try? String(contentsOfFile: workspace.file("writer-\(writer).log"), encoding: .utf8)) ?? ""
            enqueued.formUnion(text.split(separator: "\n").map(String.init))
        }
        #expect(enqueued.count > kills, "writers should have enqueued throughout")
        let delivered = try Self.deliveries(out)
        return HistoryChecker.check(enqueued: enqueued, delivered: delivered)
    }

    static func deliveries(_ path: String) throws -> [HistoryChecker.Delivery] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return try text.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            let id = (object?["id"] as? NSNumber)?.int64Value ?? -1
            let body = object?["object"] as? [String: Any]
            let marker = (body?["properties"] as? [String: Any])?["marker"] as? String ?? "?"
            let user = body?["external_id"] as? String ?? "?"
            return HistoryChecker.Delivery(marker: marker, user: user, id: id)
        }
    }
}
