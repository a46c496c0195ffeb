import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 22 ("Also"): a SIGTERM that arrived while `queued` was still opening its queue (migrating and verifying a
/// big file takes seconds) killed it with 143. It now stops cleanly once the open is done: exit 0, file intact.
@Suite(.serialized) struct StartupSignalTests {
    static let rows = 400_000

    @Test func sigtermDuringTheQueueOpenStopsCleanlyAfterIt() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        try await makeQueue(db, records: 1, in: scratch)
        // A big file, written in one statement: its integrity check at start takes a while.
        _ = try await sqlite3(
            db,
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(Self.rows))
            INSERT INTO records (kind, payload, created_at_ms)
            SELECT 'event', '{"external_id":"u' || (i % 50) || '","name":"e' || i || '","time":"2026-01-02T03:04:05Z"}',
                1700000000000 FROM n
            """, in: scratch)
        let daemon = try await DaemonProcess(scratch: scratch, db: db, waitForReady: false)
        // "sink ready" is logged just before the queue is opened.
        let opening = await Wait.value(timeout: .seconds(30), every: .milliseconds(1)) { () -> Bool? in
            if daemon.exited != nil { return false }
            return daemon.log.contains("sink ready") ? true : nil
        }
        #expect(opening == true, "\(daemon.log)")
        daemon.signal(SIGTERM)
        let status = await daemon.waitForExit(timeout: .seconds(60))
        let log = daemon.log
        #expect(status == 0, "exit \(String(describing: status)); log:\n\(log.suffix(2000))")
        let opened = log.contains("queued ready")
        print("SIGTERM during start: exit \(String(describing: status)), reached ready: \(opened)")
        let check = try await queuectl(["check"], db: db, in: scratch)
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let count = try await sqlite3(db, "SELECT count(*) FROM records", in: scratch)
        #expect(count == ["\(Self.rows + 1)"])
    }
}
