import EventQueue
import FakeBraze
import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// One record a Braze fault test enqueued: a unique marker (`mk`, in `properties` for events and purchases, a
/// custom attribute for attributes), its user, its kind and the id the queue gave it.
struct MarkedRecord: Hashable {
    var marker: String
    var user: String
    var kind: String
    var flag: String?
    var id: Int64 = 0

    /// The NDJSON line `queuectl enqueue --ndjson` reads.
    var line: String {
        let flagMember = flag.map { #","flag":"\#($0)""# } ?? ""
        switch kind {
        case "attribute":
            return #"{"type":"attribute","external_id":"\#(user)","mk":"\#(marker)"\#(flagMember)}"#
        case "purchase":
            return #"{"type":"purchase","external_id":"\#(user)","product_id":"p-\#(marker)","currency":"USD","#
                + #""price":1.5,"properties":{"mk":"\#(marker)"\#(flagMember)}}"#
        default:
            return
                #"{"type":"event","external_id":"\#(user)","name":"ev","properties":{"mk":"\#(marker)"\#(flagMember)}}"#
        }
    }

    /// `count` records for `users` users; kinds cycle through `kinds`; `flag(index)` marks chosen records.
    static func make(
        _ count: Int, users: Int, kinds: [String] = ["event"], prefix: String = "m",
        flag: (Int) -> String? = { _ in nil }
    ) -> [MarkedRecord] {
        (0..<count).map { index in
            MarkedRecord(
                marker: "\(prefix)\(index)", user: "u\(index % users)", kind: kinds[index % kinds.count],
                flag: flag(index))
        }
    }
}

/// What the fake received, reduced to what the checks need.
struct ReceivedMarker {
    var marker: String
    var user: String
    var array: String
    var request: Int
    var accepted: Bool
}

enum BrazeFault {
    /// A key that is easy to spot anywhere it should not be.
    static func makeKey() -> String { "braze-test-key-\(UUID().uuidString.lowercased())" }

    /// Enqueues `records` in one `queuectl enqueue` call and fills in their ids (from `queuectl peek --json`).
    static func enqueue(_ records: [MarkedRecord], db: String, in scratch: Scratch) async throws -> [MarkedRecord] {
        let lines = records.map(\.line).joined(separator: "\n") + "\n"
        let result = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: lines, in: scratch)
        guard result.status == 0 else { throw ScratchError(message: "enqueue failed: \(result.stderr)") }
        let queued = try await peek(db: db, in: scratch)
        var ids: [String: Int64] = [:]
        for entry in queued {
            guard let id = (entry["id"] as? NSNumber)?.int64Value, let object = entry["object"] as? [String: Any],
                let marker = marker(of: object)
            else { continue }
            ids[marker] = id
        }
        return try records.map { record in
            guard let id = ids[record.marker] else {
                throw ScratchError(message: "record \(record.marker) not found in the queue after enqueue")
            }
            var copy = record
            copy.id = id
            return copy
        }
    }

    /// `queuectl peek --json` of every live record.
    static func peek(db: String, in scratch: Scratch) async throws -> [[String: Any]] {
        let result = try await queuectl(["peek", "--json", "--limit", "100000"], db: db, in: scratch)
        guard result.status == 0,
            let array = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        else { throw ScratchError(message: "peek failed (\(result.status)): \(result.stderr)") }
        return array
    }

    /// `queuectl dead list --json`: marker -> last_error.
    static func deadLetters(db: String, in scratch: Scratch) async throws -> [String: String] {
        let result = try await queuectl(["dead", "list", "--json"], db: db, in: scratch)
        guard result.status == 0,
            let array = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        else { throw ScratchError(message: "dead list failed (\(result.status)): \(result.stderr)") }
        var dead: [String: String] = [:]
        for entry in array {
            guard let object = entry["object"] as? [String: Any], let marker = marker(of: object) else { continue }
            dead[marker] = entry["last_error"] as? String ?? ""
        }
        return dead
    }

    static func marker(of object: [String: Any]) -> String? {
        if let properties = object["properties"] as? [String: Any], let marker = properties["mk"] as? String {
            return marker
        }
        return object["mk"] as? String
    }

    /// The fake's received objects in arrival order.
    static func received(_ server: FakeBrazeServer) -> [ReceivedMarker] {
        server.received().compactMap { object in
            guard let data = object.json.data(using: .utf8),
                let dictionary = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
                let marker = marker(of: dictionary)
            else { return nil }
            return ReceivedMarker(
                marker: marker, user: dictionary["external_id"] as? String ?? "?", array: object.array,
                request: object.request, accepted: object.accepted)
        }
    }

    /// The history check over the objects the fake accepted.
    static func check(_ records: [MarkedRecord], expected: Set<String>, server: FakeBrazeServer)
        -> HistoryChecker.Report
    {
        let ids = Dictionary(records.map { ($0.marker, $0.id) }, uniquingKeysWith: { first, _ in first })
        let delivered = received(server).filter(\.accepted).map { received in
            HistoryChecker.Delivery(marker: received.marker, user: received.user, id: ids[received.marker] ?? -1)
        }
        return HistoryChecker.check(enqueued: expected, delivered: delivered)
    }

    /// Reads the daemon's NOTIFY_SOCKET continuously until it exits, as systemd does, so a daemon that runs many
    /// passes never finds the socket's queue (net.unix.max_dgram_qlen, 10 by default) full. Before e42609e a full
    /// queue blocked sd_notify and wedged the daemon; NotifyBacklogTests covers that on its own. The pause between
    /// reads is a reader's pace (the queue holds 10 datagrams; a pass sends 2), not a synchronisation: no test
    /// waits on this loop.
    static func pumpNotifications(_ daemon: DaemonProcess) {
        Task.detached {
            while daemon.exited == nil {
                _ = daemon.notify.messages
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Waits (polling `GET /status`) until `pending` records are pending (none by default), none leased, the
    /// daemon idle, and (when given) `dead` records dead; returns the status.
    @discardableResult
    static func waitUntilSettled(
        _ daemon: DaemonProcess, pending: Int = 0, dead: Int? = nil, timeout: Duration = .seconds(60)
    ) async throws -> [String: Any] {
        var last: [String: Any] = [:]
        let settled = try await Wait.value(timeout: timeout, every: .milliseconds(100)) {
            () async throws -> [String: Any]? in
            last = try await daemon.status()
            let state = (last["daemon"] as? [String: Any])?["state"] as? String
            let done =
                last["pending"] as? Int == pending && last["leased"] as? Int == 0 && state == "idle"
                && (dead == nil || last["dead"] as? Int == dead)
            return done ? last : nil
        }
        guard let settled else {
            throw ScratchError(
                message: "queue not settled (\(pending) pending) within \(timeout): \(last); log tail:\n"
                    + daemon.log.suffix(4000))
        }
        return settled
    }

    /// `queuectl drain --wait` against the daemon's socket.
    static func drainAndWait(_ daemon: DaemonProcess, in scratch: Scratch) async throws -> ProcessResult {
        try await run(Products.queuectl, ["drain", "--socket", daemon.socket, "--wait"], in: scratch)
    }

    /// The process's argv (NUL-separated in /proc) as one string.
    static func commandLine(of pid: Int32) -> String {
        let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
        return String(decoding: data.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }
}

/// The setup every Braze fault scenario shares (BrazeFaultTests, ClockJumpTests, HostileSinkTests, SoakTests,
/// WriterStormTests): a directory and queue file of its own, a fresh key, the records enqueued before anything
/// runs (with the ids the queue gave them), and a started fake `/users/track` answering with `faults`.
///
/// It lives here rather than in EventQueueTestSupport because it needs FakeBraze (and so SwiftNIO): the shared
/// target stays Foundation-only, so the storage and CLI suites that link it do not build or load an HTTP server.
struct BrazeScenario {
    let scratch: Scratch
    let db: String
    let key: String
    /// What was enqueued, in id order.
    let records: [MarkedRecord]
    let server: FakeBrazeServer

    /// Every enqueued marker: what a scenario without rejections expects delivered.
    var markers: Set<String> { Set(records.map(\.marker)) }

    /// Enqueues `records` (none: an empty queue, made so that writers and `queuectl status` find one), starts the
    /// fake and runs `body`; the fake is stopped afterwards (see `withFakeBraze`).
    static func run<T>(
        records: [MarkedRecord] = [], faults: FakeBrazeFaults = .none, _ body: (BrazeScenario) async throws -> T
    ) async throws -> T {
        let scratch = Scratch()
        let db = scratch.file("queue.db")
        let key = BrazeFault.makeKey()
        let enqueued: [MarkedRecord]
        if records.isEmpty {
            try QueueWriter(path: db).close()
            enqueued = []
        } else {
            enqueued = try await BrazeFault.enqueue(records, db: db, in: scratch)
        }
        return try await withFakeBraze(key: key, faults: faults) { server in
            try await body(BrazeScenario(scratch: scratch, db: db, key: key, records: enqueued, server: server))
        }
    }

    /// Starts a daemon draining to the fake, with the key in `$BRAZE_API_KEY` (or only in `keyFile`), reading its
    /// notify socket as systemd would.
    func startDaemon(
        name: String = "d", arguments: [String] = [], environment: [String: String] = [:], keyFile: String? = nil,
        waitForReady: Bool = true
    ) async throws -> DaemonProcess {
        var all = ["--sink", "braze:" + server.baseURL] + arguments
        var environment = environment
        if let keyFile {
            all += ["--api-key-file", keyFile]
        } else {
            environment["BRAZE_API_KEY"] = key
        }
        let daemon = try await DaemonProcess(
            scratch: scratch, db: db, name: name, arguments: all, environment: environment,
            waitForReady: waitForReady)
        BrazeFault.pumpNotifications(daemon)
        return daemon
    }

    /// The history check of what the fake accepted against `expected` (every marker unless said otherwise).
    func report(expecting expected: Set<String>? = nil) -> HistoryChecker.Report {
        BrazeFault.check(records, expected: expected ?? markers, server: server)
    }

    /// Every expected record (all unless said otherwise) reached the fake, nothing unexpected did, and each
    /// user's records arrived in id order. Duplicates are the caller's to judge (see `expectDeliveredOnce`).
    @discardableResult
    func expectNothingLostOrReordered(
        _ expected: Set<String>? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) -> HistoryChecker.Report {
        let report = report(expecting: expected)
        queuedTests.expectNothingLostOrReordered(report, sourceLocation: sourceLocation)
        return report
    }

    /// `expectNothingLostOrReordered`, and no record arrived twice.
    @discardableResult
    func expectDeliveredOnce(
        _ expected: Set<String>? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) -> HistoryChecker.Report {
        let report = expectNothingLostOrReordered(expected, sourceLocation: sourceLocation)
        #expect(report.duplicateDeliveries == 0, "\(report)", sourceLocation: sourceLocation)
        return report
    }
}

/// The history checker's verdict on a run without a crash to excuse anything: nothing lost, nothing unexpected,
/// each user's records in id order. Duplicates are judged by the caller (a crash may redeliver a batch).
func expectNothingLostOrReordered(_ report: HistoryChecker.Report, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(report.lost.isEmpty, "\(report)", sourceLocation: sourceLocation)
    #expect(report.unexpected.isEmpty, "\(report)", sourceLocation: sourceLocation)
    #expect(report.reordered.isEmpty, "\(report)", sourceLocation: sourceLocation)
}

/// `expectNothingLostOrReordered`, and no record delivered twice.
func expectDeliveredOnce(_ report: HistoryChecker.Report, sourceLocation: SourceLocation = #_sourceLocation) {
    expectNothingLostOrReordered(report, sourceLocation: sourceLocation)
    #expect(report.duplicateDeliveries == 0, "\(report)", sourceLocation: sourceLocation)
}

/// Runs `body` with a started fake and always stops it. Every answer takes at least 10 ms (unless the faults
/// say otherwise), so the daemon's requests really are in flight together (`--max-in-flight`, 24 by default);
/// afterwards no user may have been in two requests in flight at once.
func withFakeBraze<T>(
    key: String, faults: FakeBrazeFaults = .none, _ body: (FakeBrazeServer) async throws -> T
) async throws -> T {
    var faults = faults
    if faults.delayMilliseconds == 0 { faults.delayMilliseconds = 10 }
    let server = try await FakeBrazeServer.start(apiKey: key, configuration: faults)
    do {
        let result = try await body(server)
        #expect(server.stats().userOverlaps == 0, "a user was in two requests in flight: \(server.stats())")
        try? await server.stop()
        return result
    } catch {
        try? await server.stop()
        throw error
    }
}

extension FakeBrazeFaults {
    /// The background faults of the long runs (SoakTests, WriterStormTests): 4% of requests answered 500 and
    /// `rateLimitRate` of them 429 with `Retry-After: 1`, from a random seed (each run meets other faults).
    static func background(rateLimitRate: Double) -> FakeBrazeFaults {
        var faults = FakeBrazeFaults()
        faults.seed = UInt64.random(in: 1...UInt64.max)
        faults.serverErrorRate = 0.04
        faults.rateLimitRate = rateLimitRate
        faults.retryAfterSeconds = 1
        return faults
    }
}
