import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The control socket's endpoints and who may use them.
@Suite struct ControlSocketTests {
    @Test func statusHasTheQueueAndDaemonKeys() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(4, db: db, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db)
        try await withDaemon(daemon) { daemon in
            let before = try await daemon.status()
            for key in [
                "pending", "leased", "dead", "oldest_pending_age_seconds", "db_bytes", "wal_bytes", "schema_version",
                "remembered_keys", "remembered_key_bytes", "daemon",
            ] {
                #expect(before.keys.contains(key), "missing \(key)")
            }
            #expect(before["pending"] as? Int == 4)
            let idle = try #require(before["daemon"] as? [String: Any])
            #expect(idle["state"] as? String == "idle")
            #expect(idle["passes"] as? Int == 0)
            #expect(idle["last_pass"] is NSNull)
            for key in ["sink", "next_retry_at", "last_error"] { #expect(idle.keys.contains(key), "missing \(key)") }
            let sink = try #require(idle["sink"] as? [String: Any])
            #expect(sink["name"] as? String == "jsonl:" + daemon.sinkFile)
            #expect(sink["healthy"] as? Bool == true)

            let wait = try await daemon.request("POST", "/launch?wait=true")
            #expect(wait.status == 200)
            let events = wait.body.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(events.first?["event"] as? String == "progress")
            let summary = try #require(events.last)
            #expect(summary["event"] as? String == "summary")
            #expect(summary["result"] as? String == "all_delivered")
            #expect(summary["delivered"] as? Int == 4)

            let after = try await daemon.daemonStatus()
            let lastPass = try #require(after["last_pass"] as? [String: Any])
            for key in ["started_at", "ended_at", "result", "delivered", "retried", "dead", "halt"] {
                #expect(lastPass.keys.contains(key), "missing last_pass.\(key)")
            }
            #expect(try await daemon.request("GET", "/nope").status == 404)
            #expect(try await daemon.request("GET", "/launch").status == 405)
        }
    }

    /// Issue 22 #6 and #7 with a real daemon: the README's key example for two users delivers both records, and
    /// the remembered keys show in `GET /status` and `/metrics`.
    @Test func oneKeyForTwoUsersDeliversBothAndTheKeysShow() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        for user in ["u1", "u2"] {
            let result = try await queuectl(
                ["enqueue", "event", "push_opened", "--key", "push-123", "--external-id", user], db: db, in: scratch)
            #expect(result.status == 0, "\(result.stderr)")
        }
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--drain-on-start"])
        try await withDaemon(daemon) { daemon in
            _ = try await daemon.waitUntilIdle(passes: 1)
            let delivered = try DeliveredLine.parse(file: daemon.sinkFile)
            #expect(delivered.map { $0.object["external_id"] as? String } == ["u1", "u2"])
            let status = try await daemon.status()
            #expect(status["remembered_keys"] as? Int == 2, "\(status)")
            #expect((status["remembered_key_bytes"] as? Int ?? 0) > 2 * 40)
            let (_, text) = try await daemon.request("GET", "/metrics")
            #expect(text.contains("eventqueue_remembered_keys 2"), "\(text)")
        }
    }

    @Test func metricsHaveTheDocumentedNames() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(7, db: db, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--drain-on-start"])
        try await withDaemon(daemon) { daemon in
            _ = try await daemon.waitUntilIdle(passes: 1)
            let (status, text) = try await daemon.request("GET", "/metrics")
            #expect(status == 200)
            for name in [
                "eventqueue_records_enqueued_total 7", "eventqueue_records_delivered_total 7",
                "eventqueue_records_retried_total 0", "eventqueue_records_dead_total 0",
                #"eventqueue_passes_total{result="all_delivered"} 1"#, "eventqueue_pass_duration_seconds_count 1",
                "eventqueue_sink_batch_duration_seconds_count 1", "eventqueue_batch_size_count 1",
                "eventqueue_records_pending 0", "eventqueue_records_leased 0", "eventqueue_records_dead 0",
                "eventqueue_oldest_pending_age_seconds 0", "eventqueue_remembered_keys 0",
                "eventqueue_remembered_key_bytes 0",
            ] {
                #expect(text.contains(name), "missing \(name) in\n\(text)")
            }
            // Every metric the shipped alerting rules use is exported (at zero from the first scrape).
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            let rules = try String(
                contentsOf: root.appendingPathComponent("packaging/prometheus/eventqueue-alerts.yml"), encoding: .utf8)
            let used = Set(rules.matches(of: /eventqueue_[a-z_]+/).map { String($0.output) })
            #expect(used.count >= 5, "\(used)")
            for metric in used.sorted() {
                #expect(text.contains("\n\(metric)") || text.contains("# TYPE \(metric) "), "the rules use \(metric)")
            }
        }
    }

    /// Needs root, to run a client as nobody with setpriv; CI runs as root.
    @Test(.enabled(if: getuid() == 0, "needs root to run a client as nobody (setpriv)"))
    func peersOutsideTheGroupAreRefused() async throws {
        let scratch = Scratch()
        chmod(scratch.path, 0o755)
        let daemon = try await DaemonProcess(scratch: scratch, db: scratch.file("queue.db"))
        try await withDaemon(daemon) { daemon in
            // Loosen the file mode so nobody can connect at all: the peer check is what must refuse it.
            chmod(daemon.socket, 0o666)
            let result = try await run(
                "/usr/bin/setpriv",
                [
                    "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/curl", "-s", "-o", "/dev/null",
                    "-w", "%{http_code}", "--unix-socket", daemon.socket, "-X", "POST", "http://localhost/launch",
                ], in: scratch)
            #expect(result.stdout == "403", "\(result.stdout) \(result.stderr)")
            #expect(try await daemon.request("POST", "/launch").status == 202, "root is allowed")
        }
    }

    @Test func twoDaemonsOnOneQueueNeverDeliverTwice() async throws {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        try await enqueueEvents(600, db: db, in: scratch)
        let arguments = ["--batch-size", "1", "--lease-seconds", "2"]
        let first = try await DaemonProcess(scratch: scratch, db: db, name: "a", arguments: arguments)
        let secondSink = scratch.file("b-out.jsonl")
        try await withDaemon(first) { first in
            let second = try await DaemonProcess(scratch: scratch, db: db, name: "b", arguments: arguments)
            try await withDaemon(second) { second in
                #expect(try await first.request("POST", "/launch").status == 202)
                // Launch the second one while the first is in its pass (and so holds the drain lock).
                try await waitFor("the first daemon's pass", every: .milliseconds(5)) {
                    try await first.daemonStatus()["state"] as? String == "draining"
                }
                let answer = try await second.request("POST", "/launch?wait=true")
                let summary = answer.body.split(separator: "\n").last.map(String.init) ?? ""
                #expect(summary.contains(#""result":"another_drainer_running""#), "\(answer.body)")
                _ = try await first.waitUntilIdle(passes: 1)
                // The second one retries once the first one's lock is gone; it then finds nothing left.
                _ = try await second.waitUntilIdle(passes: 2)
                // Under load the retry can find the lock still held more than once: at least one refusal counts.
                let metrics = try await second.request("GET", "/metrics").body
                let refusals = metrics.split(separator: "\n").first {
                    $0.hasPrefix(#"eventqueue_passes_total{result="another_drainer_running"} "#)
                }
                #expect((refusals?.split(separator: " ").last.flatMap { Int($0) } ?? 0) >= 1, "\(metrics)")
            }
        }
        let delivered =
            try DeliveredLine.parse(file: first.sinkFile).map(\.id)
            + DeliveredLine.parse(file: secondSink).map(\.id)
        #expect(delivered.count == 600)
        #expect(Set(delivered).count == 600, "every record delivered exactly once")
    }
}
