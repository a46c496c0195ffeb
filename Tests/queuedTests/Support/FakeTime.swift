import Foundation
import EventQueueTestSupport

/// A shifted wall clock for child processes, by libfaketime (`LD_PRELOAD`): the offset lives in a file the test
/// rewrites while the process runs (`FAKETIME_NO_CACHE=1` rereads it on every call), and the monotonic clocks stay
/// real (`FAKETIME_DONT_FAKE_MONOTONIC=1`), as they do when an administrator or NTP steps a real clock.
struct FakeTime {
    /// libfaketime's thread-safe build, from Debian's `libfaketime` package (scripts/setup installs it).
    static let library: String? = {
        let candidates = ["x86_64-linux-gnu", "aarch64-linux-gnu"].map { "/usr/lib/\($0)/faketime/libfaketimeMT.so.1" }
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }()

    let file: String

    /// Starts at `offset` (libfaketime syntax: "+0", "-1h", "+3600").
    init(in scratch: Scratch, name: String = "faketime", offset: String = "+0") throws {
        guard Self.library != nil else {
            throw ScratchError(
                message: "libfaketimeMT.so.1 is missing: install the libfaketime package (scripts/setup does)")
        }
        file = scratch.file("\(name).rc")
        try set(offset)
    }

    /// Steps the clock of every process started with `environment`: the file is replaced atomically, so a
    /// reader never sees it half written.
    func set(_ offset: String) throws {
        let temporary = file + ".new"
        try Data((offset + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, file) == 0 else { throw ScratchError(message: "cannot replace \(file)") }
    }

    var environment: [String: String] {
        [
            "LD_PRELOAD": Self.library ?? "", "FAKETIME_TIMESTAMP_FILE": file, "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "DONT_FAKE_MONOTONIC": "1", "NO_FAKE_STAT": "1",
        ]
    }

    /// A fixed offset for a short-lived process (a writer), without a file.
    static func environment(offset: String) -> [String: String] {
        [
            "LD_PRELOAD": library ?? "", "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "DONT_FAKE_MONOTONIC": "1", "NO_FAKE_STAT": "1",
        ]
    }
}
