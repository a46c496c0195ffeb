import Foundation
import Testing
import EventQueueTestSupport
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// How `queuectl` finds the queue in a deployment, and what it must never do while only looking at one.
@Suite struct DeploymentLookupTests {
    /// Runs queuectl with no queue or socket from the test's own environment.
    func queuectlClean(
        _ arguments: [String], environment: [String: String] = [:], in scratch: Scratch
    ) async throws -> ProcessResult {
        var clean = [
            "EVENTQUEUE_DB": "", "EVENTQUEUE_SOCKET": scratch.file("nobody-listens.sock"),
            "EVENTQUEUE_CONFIG": scratch.file("no-such.conf"), "STATE_DIRECTORY": "", "RUNTIME_DIRECTORY": "",
        ]
        for (key, value) in environment { clean[key] = value }
        return try await run(Products.queuectl, arguments, environment: clean, in: scratch)
    }

    func listing(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter {
            !$0.hasPrefix("out-") && !$0.hasPrefix("err-")
        }
        .sorted()
    }

    @Test func theSystemConfigurationNamesTheQueue() async throws {
        let scratch = Scratch()
        let db = scratch.file("system.db")
        let config = scratch.file("eventqueue.conf")
        try "# written by the package\nEVENTQUEUE_DB=\"\(db)\"\nQUEUED_SINK=jsonl:-\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let environment = ["EVENTQUEUE_CONFIG": config]
        let enqueued = try await queuectlClean(
            ["enqueue", "event", "e", "--external-id", "u1"], environment: environment, in: scratch)
        #expect(enqueued.status == 0, "\(enqueued.stderr)")
        #expect(FileManager.default.fileExists(atPath: db), "the configured queue received the record")
        let status = try await queuectlClean(["status", "--json"], environment: environment, in: scratch)
        #expect(status.stdout.contains(#""pending":1"#), "\(status.stdout) \(status.stderr)")
        // $EVENTQUEUE_DB still comes first.
        let other = scratch.file("other.db")
        let overridden = try await queuectlClean(
            ["enqueue", "event", "e", "--external-id", "u1"],
            environment: ["EVENTQUEUE_CONFIG": config, "EVENTQUEUE_DB": other],
            in: scratch)
        #expect(overridden.status == 0 && FileManager.default.fileExists(atPath: other), "\(overridden.stderr)")
    }

    @Test func optionsBeforeTheSubcommandAreAccepted() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        #expect(
            try await queuectlClean(["--db", db, "enqueue", "event", "e", "--external-id", "u1"], in: scratch).status
                == 0)
        let status = try await queuectlClean(["--db=\(db)", "status", "--json"], in: scratch)
        #expect(status.status == 0 && status.stdout.contains(#""pending":1"#), "\(status.stdout) \(status.stderr)")
        let peek = try await queuectlClean(["--db", db, "dead", "list"], in: scratch)
        #expect(peek.status == 0, "\(peek.stderr)")
        let drain = try await queuectlClean(["--socket", scratch.file("none.sock"), "drain"], in: scratch)
        #expect(drain.status == 69, "\(drain.stderr)")
    }

    @Test func inspectingCommandsNeverCreateAQueue() async throws {
        let scratch = Scratch()
        for (index, command) in [
            ["status"], ["peek"], ["dead", "list"], ["check"], ["check", "--json"],
            ["drain", "--local", "--sink", "null"],
        ].enumerated() {
            let missing = scratch.file("missing-dir-\(index)/q.db")
            let typo = scratch.file("typo-\(index).db")
            for path in [missing, typo] {
                let before = try listing(scratch.path)
                let result = try await queuectlClean(command + ["--db", path], in: scratch)
                #expect(result.status == 66, "\(command): \(result.stderr)")
                #expect(
                    result.stderr == "queuectl: error: no queue at \(path): check --db or $EVENTQUEUE_DB "
                        + "(enqueueing a record creates a queue)\n", "\(command)")
                #expect(try listing(scratch.path) == before, "\(command) created something")
            }
        }
    }

    @Test func checkLeavesTheDirectoryAsItFoundIt() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        #expect(
            try await queuectlClean(["enqueue", "event", "e", "--external-id", "u1", "--db", db], in: scratch).status
                == 0)
        let before = try listing(scratch.path)
        // The writers' line (`-turn`) stays beside the queue: the next writer uses it again.
        #expect(before == ["q.db", "q.db-turn"], "\(before)")
        let check = try await queuectlClean(["check", "--json", "--db", db], in: scratch)
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        #expect(try listing(scratch.path) == before, "check left -wal or -shm behind")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        let facts = try #require(report["facts"] as? [String: Any])
        #expect(facts["db_bytes"] is NSNumber && !(facts["db_bytes"] is String), "numbers as numbers: \(facts)")
        #expect(facts["page_count"] is NSNumber, "\(facts)")
        #expect(facts["file_mode"] as? String == "0660", "\(facts)")
    }

    @Test func creatingAQueueNoDaemonServesSaysSoOnce() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        let first = try await queuectlClean(["enqueue", "event", "e", "--external-id", "u1", "--db", db], in: scratch)
        #expect(first.status == 0)
        #expect(
            first.stderr.hasPrefix("queuectl: notice: created queue \(db), which no queued daemon"), "\(first.stderr)")
        #expect(first.stderr.split(separator: "\n").count == 1, "\(first.stderr)")
        let second = try await queuectlClean(["enqueue", "event", "e", "--external-id", "u1", "--db", db], in: scratch)
        #expect(second.status == 0 && second.stderr.isEmpty, "once: \(second.stderr)")
        // With a daemon (here: anything) listening on the socket, a new queue is served: no notice.
        let socket = scratch.file("listening.sock")
        let listener = try ListeningSocket(path: socket)
        defer { listener.close() }
        let served = try await queuectlClean(
            ["enqueue", "event", "e", "--external-id", "u1", "--db", scratch.file("served.db")],
            environment: ["EVENTQUEUE_SOCKET": socket], in: scratch)
        #expect(served.status == 0 && served.stderr.isEmpty, "\(served.stderr)")
    }

    @Test func anUnusableSinkIsMisconfiguredNotUsage() async throws {
        let scratch = Scratch()
        let db = scratch.file("q.db")
        #expect(
            try await queuectlClean(["enqueue", "event", "e", "--external-id", "u1", "--db", db], in: scratch).status
                == 0)
        let result = try await queuectlClean(
            ["drain", "--local", "--sink", "jsonl:/nonexistent/x.jsonl", "--db", db], in: scratch)
        #expect(result.status == 12, "docs/OPERATING.md: 12 when the sink is misconfigured; \(result.stderr)")
        let bad = try await queuectlClean(["drain", "--local", "--sink", "bogus", "--db", db], in: scratch)
        #expect(bad.status == 64, "a malformed --sink stays a usage error; \(bad.stderr)")
    }

    @Test func versionIsPrinted() async throws {
        let scratch = Scratch()
        let result = try await queuectlClean(["--version"], in: scratch)
        #expect(result.status == 0)
        // MAJOR.MINOR.PATCH from VERSION, or after the release commit "+dev", the commits since and the commit.
        #expect(result.stdout.wholeMatch(of: #/\d+\.\d+\.\d+([+~][0-9A-Za-z.+~]+)?\n/#) != nil, "\(result.stdout)")
    }
}

/// A bound, listening Unix socket that never accepts: enough for a "does anyone listen here" probe.
final class ListeningSocket {
    let descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else { throw ScratchError(message: "cannot listen on \(path)") }
    }

    func close() { _ = Glibc.close(descriptor) }
}
