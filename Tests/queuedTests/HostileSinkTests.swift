import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The real daemon against a sink that echoes the key and sends terminal control sequences (issue 13, items 2
/// and 3): the key appears nowhere (log, `/status`, the `drain --wait` line, the queue file), and no control
/// character reaches the log or `queuectl dead list`.
@Suite(.serialized) struct HostileSinkTests {
    /// Every byte of the queue file and its WAL, as text.
    static func queueFileText(_ db: String) -> String {
        ["", "-wal"].compactMap { FileManager.default.contents(atPath: db + $0) }
            .map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    static let controls: Set<UInt32> = Set(0..<0x20).subtracting([0x0A]).union([0x7F, 0x9B])

    @Test func anEchoed401KeepsTheKeyOutOfTheHaltLineStatusAndLog() async throws {
        var faults = FakeBrazeFaults()
        faults.hostileStatus = 401
        faults.hostileMessage = "invalid key {authorization}\u{1B}]0;owned\u{07}"
        try await BrazeScenario.run(records: MarkedRecord.make(5, users: 5), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 12, "\(drain.stdout) \(drain.stderr)")
                #expect(drain.stdout.contains("invalid key Bearer [redacted]"), "\(drain.stdout)")
                let (_, status) = try await daemon.request("GET", "/status")
                #expect(status.contains("[redacted]"), "\(status)")
                for (name, text) in [
                    ("halt line", drain.stdout + drain.stderr), ("status", status), ("log", daemon.log),
                ] {
                    #expect(!text.contains(scenario.key), "the key leaked into the \(name): \(text)")
                    #expect(
                        !text.unicodeScalars.contains { Self.controls.contains($0.value) }, "raw control in \(name)")
                }
            }
            #expect(!Self.queueFileText(scenario.db).contains(scenario.key))
        }
    }

    @Test func anEchoed400WithEscapesIsDeadLetteredRedactedAndShownEscaped() async throws {
        var faults = FakeBrazeFaults()
        faults.hostileStatus = 400
        faults.hostileMessage = "rejected {authorization} \u{1B}[2J\u{1B}]0;owned\u{07}\u{9B}31m"
        try await BrazeScenario.run(records: MarkedRecord.make(2, users: 2), faults: faults) { scenario in
            let daemon = try await scenario.startDaemon()
            try await withDaemon(daemon) { daemon in
                let drain = try await BrazeFault.drainAndWait(daemon, in: scenario.scratch)
                #expect(drain.status == 10, "\(drain.stdout) \(drain.stderr)")
                try await BrazeFault.waitUntilSettled(daemon, dead: 2)
                let (_, status) = try await daemon.request("GET", "/status")
                #expect(!status.contains(scenario.key), "\(status)")
                let log = daemon.log
                #expect(!log.contains(scenario.key), "the key leaked into the log")
                #expect(!log.unicodeScalars.contains { Self.controls.contains($0.value) }, "raw control in the log")
                #expect(log.contains("\\x1B[2J"), "the escapes are shown, escaped: \(log.suffix(2000))")
            }
            let dead = try await queuectl(["dead", "list"], db: scenario.db, in: scenario.scratch)
            #expect(dead.status == 0)
            #expect(
                dead.stdout.contains("rejected Bearer [redacted] \\x1B[2J\\x1B]0;owned\\x07\\x9B31m"), "\(dead.stdout)")
            #expect(!dead.stdout.unicodeScalars.contains { Self.controls.contains($0.value) && $0 != "\t" })
            #expect(!dead.stdout.contains(scenario.key))
            #expect(!Self.queueFileText(scenario.db).contains(scenario.key), "the key was stored in last_error")
        }
    }
}
