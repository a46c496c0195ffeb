import Foundation
import Testing
import EventQueueTestSupport

/// The unit files are checked by systemd's own tools, and the unit's exact ExecStart= is run.
@Suite struct SystemdUnitTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static var unitDirectory: URL { repository.appendingPathComponent("systemd") }

    /// The units with the installed binary path replaced by the built one, in a fresh directory.
    func substitutedUnits(in directory: String) throws -> String {
        for name in ["queued.service", "queued.socket"] {
            let text = try String(contentsOf: Self.unitDirectory.appendingPathComponent(name), encoding: .utf8)
            try text.replacingOccurrences(of: "/usr/bin/queued", with: Products.queued).write(
                toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return directory + "/queued.service"
    }

    /// Runs systemd-analyze. Never skipped: CI installs it (`systemd` in scripts/setup, which scripts/test runs
    /// first), and a check that silently does not run would prove nothing.
    func analyze(_ arguments: [String], in scratch: Scratch) async throws -> ProcessResult {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else {
            throw ScratchError(
                message: "/usr/bin/systemd-analyze is missing: install the systemd package (scripts/setup does)")
        }
        return try await run("/usr/bin/systemd-analyze", arguments, in: scratch)
    }

    @Test
    func unitsVerifyCleanly() async throws {
        let directory = Scratch()
        let service = try substitutedUnits(in: directory.path)
        let result = try await analyze(["verify", service, directory.file("queued.socket")], in: directory)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.isEmpty, "systemd-analyze verify printed warnings:\n\(result.output)")
    }

    @Test
    func serviceExposureIsAtMostOnePointFive() async throws {
        let directory = Scratch()
        let service = try substitutedUnits(in: directory.path)
        let result = try await analyze(["security", "--offline=true", "--no-pager", service], in: directory)
        let line = try #require(result.output.split(separator: "\n").first { $0.contains("Overall exposure level") })
        let score = line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
        let exposure = try #require(score, "cannot read the score from: \(line)")
        #expect(exposure <= 1.5, "\(line)")
    }

    /// The ExecStart= line of queued.service, with the binary and systemd's variables substituted, reaches READY=1
    /// and stops cleanly on SIGTERM.
    @Test func execStartCommandLineBecomesReady() async throws {
        let text = try String(
            contentsOf: Self.unitDirectory.appendingPathComponent("queued.service"), encoding: .utf8)
        let execStart = try #require(text.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let workspace = Scratch()
        let state = workspace.file("state")
        let runtime = workspace.file("runtime")
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        let sink = "jsonl:" + workspace.file("out.jsonl")
        let words = execStart.dropFirst("ExecStart=".count).split(separator: " ").map { word -> String in
            word == "${QUEUED_SINK}" ? sink : String(word)
        }
        #expect(words.first == "/usr/bin/queued")
        let listener = try NotifyListener(path: workspace.file("notify.sock"))
        let daemon = try ChildProcess(
            Products.queued, Array(words.dropFirst()),
            environment: [
                "STATE_DIRECTORY": state, "RUNTIME_DIRECTORY": runtime, "NOTIFY_SOCKET": listener.path,
                "EVENTQUEUE_DB": "", "EVENTQUEUE_SOCKET": "",
            ], logDirectory: workspace.path)
        let ready = await listener.waitFor { $0.split(separator: "\n").contains("READY=1") } != nil
        #expect(ready, "no READY=1; stderr: \(daemon.standardError.suffix(800))")
        #expect(FileManager.default.fileExists(atPath: state + "/queue.db"))
        #expect(FileManager.default.fileExists(atPath: runtime + "/control.sock"))
        daemon.signal(SIGTERM)
        let (status, timedOut) = await daemon.exited(within: .seconds(20))
        #expect(!timedOut && status == 0, "\(daemon.standardError.suffix(800))")
        let stopping = await listener.waitFor(
            { $0.split(separator: "\n").contains("STOPPING=1") }, timeout: .seconds(2))
        #expect(stopping != nil)
    }
}
