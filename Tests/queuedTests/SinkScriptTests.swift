import Foundation
import Testing
import EventQueueTestSupport

/// `packaging/eventqueue-sink` (issue 22 #10): what it would write into `queued.env` or copy into the Braze
/// credential is checked before anything is written (and before its root check), so every refusal here runs
/// without touching /etc. The accepted paths are exercised as root in the booted container (scripts/systemd-test).
@Suite struct SinkScriptTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("packaging/eventqueue-sink").path

    /// Runs the script; the environment file must be untouched whatever it says.
    func sink(_ arguments: [String], in scratch: Scratch) async throws -> ProcessResult {
        let before = FileManager.default.contents(atPath: "/etc/eventqueue/queued.env")
        let result = try await run("/bin/sh", [Self.script] + arguments, in: scratch)
        #expect(FileManager.default.contents(atPath: "/etc/eventqueue/queued.env") == before, "\(arguments)")
        return result
    }

    func keyFile(in scratch: Scratch) throws -> String {
        let key = scratch.file("key")
        try "braze-key\n".write(toFile: key, atomically: true, encoding: .utf8)
        return key
    }

    @Test(arguments: [
        "braze:https://rest.iad-01.braze.com\nLD_PRELOAD=/tmp/evil.so",
        "braze:https://rest.iad-01.braze.com\nEVENTQUEUE_DB=/tmp/other.db",
        "jsonl:/var/log/x.jsonl\nLD_PRELOAD=/tmp/evil.so",
        "braze:https://rest.iad-01.braze.com\"",
        "braze:https://rest.iad-01.braze.com LD_PRELOAD=/tmp/evil.so",
        "jsonl:/var/log/a\\nb",
        "braze:ftp://example.com",
        "braze:https://",
    ])
    func aSinkThatIsNotOneLineOfURLOrPathCharactersIsRefused(_ sink: String) async throws {
        let scratch = Scratch()
        let result = try await self.sink([sink, "--api-key-file", try keyFile(in: scratch)], in: scratch)
        #expect(result.status == 64, "\(result)")
        #expect(result.stderr.contains("eventqueue-sink: "), "\(result)")
        #expect(!result.stderr.contains("run as root"), "refused before the root check: \(result)")
    }

    @Test func aSymlinkedKeyFileIsRefused() async throws {
        let scratch = Scratch()
        let link = scratch.file("key-link")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: try keyFile(in: scratch))
        let result = try await sink(["braze:https://rest.iad-01.braze.com", "--api-key-file", link], in: scratch)
        #expect(result.status == 66, "\(result)")
        #expect(result.stderr.contains("is a symbolic link"), "\(result)")
    }

    @Test(arguments: ["directory", "fifo"])
    func aKeyFileThatIsNotARegularFileIsRefused(_ kind: String) async throws {
        let scratch = Scratch()
        let path = scratch.file(kind)
        if kind == "directory" {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } else {
            #expect(mkfifo(path, 0o600) == 0)
        }
        let result = try await sink(["braze:https://rest.iad-01.braze.com", "--api-key-file", path], in: scratch)
        #expect(result.status == 66, "\(result)")
        #expect(result.stderr.contains("not a regular file"), "\(result)")
    }
}
