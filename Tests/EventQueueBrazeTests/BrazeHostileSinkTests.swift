import EventQueue
import EventQueueDelivery
import FakeBraze
import Foundation
import Logging
import Testing

@testable import EventQueueBraze

#if canImport(Glibc)
    import Glibc
#endif

/// A sink that answers as an attacker would (issue 13, items 2, 3, 11, 12; issue 16 "Smaller"): echoing the
/// key, sending terminal control sequences, over-size answers, redirects; and malformed base URLs and key files.
@Suite struct BrazeHostileSinkTests {
    /// Every text the sink hands on: the halt reason, retry and rejection reasons, every log line.
    static func everything(_ report: DeliveryReport, log: [String]) -> String {
        var texts = log
        if let halt = report.halt { texts.append(halt.description) }
        for outcome in report.outcomes.values {
            switch outcome {
            case .delivered: continue
            case .retry(let reason, _, _): texts.append(reason)
            case .rejected(let reason): texts.append(reason)
            }
        }
        return texts.joined(separator: "\n")
    }

    /// Delivers `records` through a sink whose fake answers with `status` and `message`; returns `everything`.
    static func textsAfterDelivering(
        _ records: [OutgoingRecord], status: Int, message: String
    ) async throws -> String {
        var faults = FakeBrazeFaults()
        faults.hostileStatus = status
        faults.hostileMessage = message
        let lines = Locked<[String]>([])
        let logger = Logger(label: "hostile") { _ in CapturingLogHandler(lines: lines) }
        let report = try await withSink(faults: faults, logger: logger) { _, sink in await sink.deliver(records) }
        return everything(report, log: lines.value)
    }

    @Test(arguments: [401, 400, 500])
    func anEchoedKeyIsRedactedEverywhere(status: Int) async throws {
        let text = try await Self.textsAfterDelivering(
            distinctEvents(3), status: status, message: "you sent {authorization}")
        #expect(text.contains("you sent Bearer [redacted]"), "\(text)")
        #expect(!text.contains(testKey), "the key leaked: \(text)")
    }

    @Test func controlSequencesFromTheSinkAreEscaped() async throws {
        let text = try await Self.textsAfterDelivering(
            distinctEvents(1), status: 400, message: "bad\u{1B}[2J\u{1B}]0;owned\u{07} request\u{9B}31m")
        #expect(text.contains("bad\\x1B[2J\\x1B]0;owned\\x07 request\\x9B31m"), "\(text)")
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
    }

    @Test func anOverSizeSuccessIsDeliveredNotRetried() async throws {
        var faults = FakeBrazeFaults()
        // Just over the limit; a generous deadline, so a loaded machine cannot turn it into a timeout (a retry).
        faults.successPaddingBytes = BrazeTransport.maxResponseBytes + 65_536
        let (report, stats) = try await withSink(faults: faults, requestTimeout: .seconds(120)) { server, sink in
            (await sink.deliver(distinctEvents(10)), server.stats())
        }
        #expect(report.halt == nil)
        #expect(report.outcomes.count == 10)
        #expect(report.outcomes.values.allSatisfy { $0 == .delivered }, "\(report.outcomes)")
        #expect(stats.requests == 1, "sent again: \(stats)")
    }

    @Test func aRedirectHaltsKeepsTheRecordsAndIsNotFollowed() async throws {
        // The redirect points at a second fake that would accept the key: it must see no request.
        let elsewhere = try await FakeBrazeServer.start(apiKey: testKey, configuration: .none)
        var faults = FakeBrazeFaults()
        faults.redirectLocation = elsewhere.baseURL + "/users/track"
        let report = try await withSink(faults: faults) { _, sink in await sink.deliver(distinctEvents(5)) }
        let followed = elsewhere.stats().requests
        try await elsewhere.stop()
        #expect(report.outcomes.isEmpty, "a redirect must not use up attempts: \(report.outcomes)")
        #expect(report.halt?.kind == .configuration)
        #expect(report.halt?.reason.contains("301") == true, "\(report.halt?.description ?? "")")
        #expect(report.halt?.reason.contains("not followed") == true)
        #expect(followed == 0, "the redirect was followed, with the key")
    }

    @Test func malformedBaseURLsAreRefusedAtStart() {
        for url in [
            "http://[::1", "http://", "https://exa mple.com", "ftp://example.com", "http://host?x=1", "http://:80",
            // Ports out of range: SwiftNIO traps on them, so they must never reach the HTTP client.
            "http://127.0.0.1:1832767", "http://127.0.0.1:65536", "http://[::1]:99999", "http://u:p@h:70000/base",
            "http://127.0.0.1:0", "http://127.0.0.1:-1", "http://127.0.0.1:8o",
        ] {
            #expect(throws: BrazeConfigurationError.self, "\(url)") { try BrazeSink.validate(baseURL: url) }
        }
        for url in [
            "https://rest.iad-01.braze.com", "http://127.0.0.1:8080", "http://[::1]:9000", "https://h/base",
            "http://127.0.0.1:65535", "http://u:p@h:443/base",
        ] {
            #expect(throws: Never.self, "\(url)") { try BrazeSink.validate(baseURL: url) }
        }
    }

    @Test func aPasswordInTheBaseURLIsNeverShown() throws {
        let password = "pw-\(UInt32.random(in: 0...UInt32.max))-secret"
        let sink = BrazeSink(
            baseURL: "https://user:\(password)@rest.example.invalid", apiKey: try BrazeAPIKey(testKey),
            logger: quietLogger)
        #expect(sink.name == "braze:https://user:[redacted]@rest.example.invalid")
        #expect(!"\(sink)".contains(password))
        #expect(ExternalText.redacted("GET failed for \(password)") == "GET failed for [redacted]")
        Task { await sink.shutdown() }
    }
}

/// Key files: regular, and not readable by others (issue 13, item 4).
@Suite struct BrazeKeyFileTests {
    @Test func aWorldReadableKeyFileIsRefusedWithTheFix() throws {
        let directory = Scratch()
        let file = directory.path + "/key"
        try Data("sk-file-key\n".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o644)
        do {
            _ = try BrazeAPIKey.resolve(apiKeyFile: file, environment: [:])
            Issue.record("a world-readable key file must be refused")
        } catch {
            #expect("\(error)".contains("readable by every user"), "\(error)")
            #expect("\(error)".contains("chmod o-rwx \(file)"), "\(error)")
            #expect(!"\(error)".contains("sk-file-key"))
        }
        // systemd's credentials are 0400 or 0440; group-readable is fine.
        for mode: mode_t in [0o600, 0o400, 0o440, 0o640] {
            chmod(file, mode)
            #expect(try BrazeAPIKey.resolve(apiKeyFile: file, environment: [:]).secret == "sk-file-key")
        }
    }

    @Test func aFIFOIsRefusedAtOnceInsteadOfHanging() throws {
        let directory = Scratch()
        let fifo = directory.path + "/key.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Before the fix, open(2) waited for a writer forever; with O_NONBLOCK it returns and fstat refuses it.
        #expect(throws: BrazeConfigurationError.notARegularKeyFile(source: "--api-key-file \(fifo)")) {
            try BrazeAPIKey.resolve(apiKeyFile: fifo, environment: [:])
        }
        #expect(throws: BrazeConfigurationError.notARegularKeyFile(source: "--api-key-file /dev/null")) {
            try BrazeAPIKey.resolve(apiKeyFile: "/dev/null", environment: [:])
        }
    }
}
