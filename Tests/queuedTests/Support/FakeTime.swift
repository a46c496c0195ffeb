import Foundation
import EventQueueTestSupport

/// A shifted wall clock for child processes, by libfaketime (`LD_PRELOAD`): the offset lives in a file the test
/// rewrites while the process runs (`FAKETIME_NO_CACHE=1` rereads it on every call), and the monotonic clocks stay
/// real (`FAKETIME_DONT_FAKE_MONOTONIC=1`), as they do when an administrator or NTP steps a real clock.
///
/// One catch with Swift programs: libfaketime's constructor creates a shared-memory segment and announces it with
/// `setenv("FAKETIME_SHARED")`, which moves `environ`; the Swift runtime finds `argv` by walking up from `environ`
/// and then sees no arguments at all (swiftlang/swift#76080). So the segment is created once here, by a shell that
/// `exec`s away before libfaketime's destructor could remove it, and every process gets `FAKETIME_SHARED` preset:
/// libfaketime then attaches to it without touching the environment. The segment is removed in `deinit`.
///
/// A second catch: libfaketime also rewrites absolute `timerfd_settime` deadlines by the offset, monotonic clocks
/// included, so a timer the daemon arms while the offset is -1 h (a `Task.sleep`) fires an hour late, and one armed
/// at +1 h fires at once. A real clock step does not touch monotonic timers. The tests are built so that nothing
/// they assert waits on a timer armed under a negative offset.
final class FakeTime: Sendable {
    /// libfaketime's thread-safe build, from Debian's `libfaketime` package (scripts/setup installs it).
    static let library: String? = {
        let candidates = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map { "/usr/lib/\($0)/faketime/libfaketimeMT.so.1" }
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }()

    let file: String
    let library: String
    /// "SEMAPHORE SHM", the names libfaketime reads from `FAKETIME_SHARED`.
    let shared: String

    /// Starts at `offset` (libfaketime syntax: "+0", "-1h", "+3600").
    init(in scratch: Scratch, name: String = "faketime", offset: String = "+0") async throws {
        guard let library = Self.library else {
            throw ScratchError(
                message: "libfaketimeMT.so.1 is missing: install the libfaketime package (scripts/setup does)")
        }
        self.library = library
        file = scratch.file("\(name).rc")
        let announced = try await run(
            "/bin/sh", ["-c", #"printf %s "$FAKETIME_SHARED"; exec /bin/true"#],
            environment: ["LD_PRELOAD": library, "FAKETIME": "+0"], in: scratch)
        shared = announced.stdout
        guard shared.split(separator: " ").count == 2 else {
            throw ScratchError(message: "libfaketime announced no shared segment: '\(shared)' (\(announced))")
        }
        try set(offset)
    }

    deinit {
        let names = shared.split(separator: " ")
        if names.count == 2 {
            // sem_unlink and shm_unlink, by their files on Linux.
            unlink("/dev/shm/sem." + names[0].dropFirst())
            unlink("/dev/shm/" + names[1].dropFirst())
        }
    }

    /// Steps the clock of every process started with `environment`: the file is replaced atomically, so a
    /// reader never sees it half written.
    func set(_ offset: String) throws {
        let temporary = file + ".new"
        try Data((offset + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, file) == 0 else { throw ScratchError(message: "cannot replace \(file)") }
    }

    /// For a process that follows `set(_:)` while it runs.
    var environment: [String: String] {
        [
            "LD_PRELOAD": library, "FAKETIME_SHARED": shared, "FAKETIME_TIMESTAMP_FILE": file,
            "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1", "NO_FAKE_STAT": "1",
        ]
    }

    /// For a short-lived process (a writer) at a fixed offset.
    func environment(offset: String) -> [String: String] {
        [
            "LD_PRELOAD": library, "FAKETIME_SHARED": shared, "FAKETIME": offset,
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "NO_FAKE_STAT": "1",
        ]
    }
}
