import EventQueue
import EventQueueTestSupport
import Foundation
import Testing

/// `kill -9` at random moments while writers keep enqueueing: after a restart every record that was not acked is
/// delivered; nothing is lost; duplicates are bounded by one batch per kill; a clean SIGTERM adds none.
@Suite(.serialized) struct CrashTests {
    static let binaries = Bundle.main.bundleURL
    static var queued: String { binaries.appendingPathComponent("queued").path }
    static var queuectl: String { binaries.appendingPathComponent("queuectl").path }
    /// EVENTQUEUE_CRASH_KILLS sets the number of kills (CI profile: 20).
    static let kills = Int(ProcessInfo.processInfo.environment["EVENTQUEUE_CRASH_KILLS"] ?? "") ?? 20
    static let batchSize = 10

    final class Workspace: Sendable {
        let directory: String
        init() throws {
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "eventqueue-crash-\(UUID().uuidString)"
                ).path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        func file(_ name: String) -> String { directory + "/" + name }
        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

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
        let workspace = try Workspace()
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
                  if "\(Self.queuectl)" enqueue event tick --prop marker=w\(writer)-$i \
                       --external-id user-$((i % 4)) --db "\(db)" >/dev/null 2>>"\(log).err"; then
                    echo "w\(writer)-$i" >> "\(log)"
                  fi
                  sleep 0.0$((RANDOM % 5))
                done
                """
            writers.append(try ChildProcess("/bin/bash", ["-c", script], logDirectory: workspace.directory))
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
                Self.queued, arguments, environment: ["NOTIFY_SOCKET": notify.path],
                logDirectory: workspace.directory)
            if signal == SIGTERM {
                let ready = await notify.waitFor { $0.split(separator: "\n").contains("READY=1") }
                #expect(ready != nil, "no READY=1: \(daemon.standardError.suffix(500))")
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...900)))
            daemon.signal(signal)
            let (status, timedOut) = await daemon.exited(within: 20)
            if signal == SIGTERM {
                #expect(!timedOut && status == 0, "SIGTERM: status \(status): \(daemon.standardError.suffix(500))")
            }
        }
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        for writer in writers { _ = await writer.exited(within: 30) }

        // A final daemon drains what is left; then a clean stop.
        let final = try ChildProcess(Self.queued, arguments, logDirectory: workspace.directory)
        let deadline = Date().addingTimeInterval(60)
        var remaining = Int.max
        while Date() < deadline {
            try await Task.sleep(for: .milliseconds(200))
            let consumer = try QueueConsumer(path: db, options: QueueOptions(minimumFreeBytes: 0))
            let stats = try consumer.stats()
            consumer.close()
            remaining = stats.pending + stats.leased
            if remaining == 0 { break }
        }
        #expect(remaining == 0, "the restarted daemon should deliver everything within a minute")
        final.signal(SIGTERM)
        let (finalStatus, _) = await final.exited(within: 20)
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
