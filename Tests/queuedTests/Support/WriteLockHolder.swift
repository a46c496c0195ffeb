import Foundation
import EventQueueTestSupport

/// Another process holding the queue file's write lock: Python's `sqlite3` module runs `BEGIN EXCLUSIVE` (what an
/// admin's shell or a long bulk import does), then holds it until `release()` or for `seconds`, whichever comes
/// first, and commits.
final class WriteLockHolder: Sendable {
    let child: ChildProcess
    let lockedMarker: String
    let releaseMarker: String

    /// Starts the holder and returns once it holds the lock.
    init(db: String, seconds: Double, in scratch: Scratch) async throws {
        let id = UUID().uuidString.prefix(8)
        lockedMarker = scratch.file("locked-\(id)")
        releaseMarker = scratch.file("release-\(id)")
        let script = """
            import os, sqlite3, sys, time
            db, locked, release, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
            connection = sqlite3.connect(db, timeout=30, isolation_level=None)
            connection.execute("BEGIN EXCLUSIVE")
            open(locked, "w").close()
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not os.path.exists(release):
                time.sleep(0.01)
            connection.execute("COMMIT")
            """
        child = try ChildProcess(
            "/usr/bin/python3", ["-c", script, db, lockedMarker, releaseMarker, String(seconds)],
            logDirectory: scratch.path)
        let locked = await Wait.value(timeout: .seconds(40), every: .milliseconds(5)) { () -> Bool? in
            if FileManager.default.fileExists(atPath: lockedMarker) { return true }
            return child.hasExited ? false : nil
        }
        guard locked == true else {
            throw ScratchError(message: "python3 never took the write lock: \(child.standardError)")
        }
    }

    /// Commits and waits for the holder to exit; returns its status.
    @discardableResult
    func release() async -> Int32 {
        _ = FileManager.default.createFile(atPath: releaseMarker, contents: nil)
        return await child.exited()
    }

    /// Waits for the holder to let go by itself (after its `seconds`).
    @discardableResult
    func finished() async -> Int32 { await child.exited() }
}
