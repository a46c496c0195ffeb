import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 16 "Smaller": an open on a full disk left a 3-byte `-shm` and an empty `-wal` behind (SQLite truncates a
/// new `-shm` to 3 bytes, cannot grow it, and only a successful close removes it). Mounting needs root.
@Suite(.serialized) struct DiskFullLeftoverTests {
    @Test(.enabled(if: runningAsRoot, "mounting a tmpfs needs root"))
    func anOpenOnAFullDiskLeavesNoSharedMemoryFileBehind() async throws {
        try await withQueueOnTmpfs(megabytes: 24, records: 5) { tmpfs in
            let (scratch, mount, db) = (tmpfs.scratch, tmpfs.mount, tmpfs.db)
            #expect(access(db + "-shm", F_OK) != 0)
            try mount.fill(leaving: 0)
            let noReserve = ["EVENTQUEUE_MIN_FREE_BYTES": "0"]
            for arguments in [
                ["enqueue", "event", "e", "--external-id", "u1"], ["status"], ["drain", "--local", "--sink", "null"],
            ] {
                let result = try await queuectl(arguments, db: db, environment: noReserve, in: scratch)
                #expect(result.status == 74, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains("queue disk full"), "\(arguments): \(result.stderr)")
                #expect(access(db + "-shm", F_OK) != 0, "\(arguments) left a -shm behind")
                #expect(access(db + "-wal", F_OK) != 0, "\(arguments) left a -wal behind")
            }
            // A queue that does not exist yet is not created half-way either.
            let fresh = mount.file("new.db")
            let create = try await queuectl(["enqueue", "event", "e", "--external-id", "u1"], db: fresh, in: scratch)
            #expect(create.status == 74, "\(create.stderr)")
            #expect(access(fresh, F_OK) != 0)
        }
    }
}
