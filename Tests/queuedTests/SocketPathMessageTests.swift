import Foundation
import Testing
import EventQueueTestSupport

/// When the control socket cannot be bound, queued says which path, why, and what to do, in one line.
@Suite struct SocketPathMessageTests {
    @Test func aMissingDirectoryIsNamed() async throws {
        let scratch = Scratch()
        let result = try await run(
            Products.queued,
            [
                "--db", scratch.file("q.db"), "--socket", "/nope-\(UUID().uuidString.prefix(8))/o.sock", "--sink",
                "null",
            ],
            environment: ["LISTEN_PID": "", "LISTEN_FDS": "", "NOTIFY_SOCKET": ""], in: scratch)
        #expect(result.status == 73, "\(result.stderr)")
        #expect(!result.stderr.contains("bind(descriptor"), "NIO's internals leaked: \(result.stderr)")
        #expect(result.stderr.contains("does not exist; create it, or pass --socket PATH"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    @Test func aSocketInUseGetsOnlyItsOwnAdvice() async throws {
        let scratch = Scratch()
        let daemon = try await DaemonProcess(scratch: scratch, db: scratch.file("q.db"))
        try await withDaemon(daemon) { daemon in
            let second = try await run(
                Products.queued, ["--db", scratch.file("q2.db"), "--socket", daemon.socket, "--sink", "null"],
                environment: ["LISTEN_PID": "", "LISTEN_FDS": "", "NOTIFY_SOCKET": ""], in: scratch)
            #expect(second.status == 73, "\(second.stderr)")
            #expect(second.stderr.contains("another daemon is listening on it"), "\(second.stderr)")
            #expect(!second.stderr.contains("check the directory exists"), "\(second.stderr)")
        }
    }

    @Test func versionIsPrinted() async throws {
        let scratch = Scratch()
        let result = try await run(Products.queued, ["--version"], in: scratch)
        // MAJOR.MINOR.PATCH from VERSION, or after the release commit "+dev", the commits since and the commit.
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.wholeMatch(of: #/\d+\.\d+\.\d+([+~][0-9A-Za-z.+~]+)?\n/#) != nil, "\(result.stdout)")
    }
}
