import Foundation
import Testing
import EventQueueTestSupport

/// The daemon drains a queue whose disk is below the writers' free-space reserve (writers are refused with 74),
/// and the drain gives the space back so writers work again. queuectlTests/DiskFullTests has the writers' side
/// and SQLite's own ENOSPC. Mounting needs root: CI runs as root; elsewhere this test is skipped.
@Suite(.serialized) struct DiskFullDaemonTests {
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func theDaemonDrainsAFullQueueAndWritersResume() async throws {
        let count = 20_000
        try await withQueueOnTmpfs(records: count) { tmpfs in
            let (scratch, mount, db) = (tmpfs.scratch, tmpfs.mount, tmpfs.db)
            let reserve: Int64 = 16 * 1024 * 1024
            try mount.fill(leaving: reserve - 2 * 1024 * 1024)
            let refused = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: db, in: scratch)
            #expect(refused.status == 74 && refused.stderr.contains("queue disk full"), "\(refused.stderr)")

            // The daemon's sink file is in the scratch directory, on another filesystem.
            let daemon = try await DaemonProcess(scratch: scratch, db: db, arguments: ["--batch-size", "500"])
            try await withDaemon(daemon) { daemon in
                let drain = try await queuectl(["drain", "--wait", "--socket", daemon.socket], db: db, in: scratch)
                #expect(drain.status == 0, "\(drain.stdout) \(drain.stderr)\nlog:\n\(daemon.log)")
                #expect(mount.freeBytes >= reserve, "the drain freed too little: \(mount.freeBytes) bytes free")
                let again = try await queuectl(
                    ["enqueue", "event", "again", "--external-id", "u1"], db: db, in: scratch)
                #expect(again.status == 0, "\(again.stderr)")
            }
            let delivered = try DeliveredLine.parse(file: daemon.sinkFile)
            #expect(delivered.count == count)
            #expect(delivered.map(\.id) == Array(1...Int64(count)))
        }
    }
}
