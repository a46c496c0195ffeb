// Scenario 4: drain to HTTP. The Drainer with the Braze sink posts to a local `/users/track` in its own process,
// one request of at most 75 objects per claimed batch of 75. Baseline: the same request bodies, serialized
// before the clock starts, posted back to back with the same HTTP client and no SQLite. The time is split
// into SQLite (claim, ack), parse + validate of the stored payloads, JSON serialization and HTTP.
import AsyncHTTPClient
import EventQueue
import EventQueueBraze
import EventQueueDelivery
import Foundation
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Wraps a sink and adds up the time spent inside `deliver`.
final class TimingSink: Sink {
    let inner: any Sink
    let nanoseconds = Mutex<UInt64>(0)
    var name: String { inner.name }

    init(_ inner: any Sink) { self.inner = inner }

    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        let start = now()
        let report = await inner.deliver(batch)
        let elapsed = now() - start
        nanoseconds.withLock { $0 += elapsed }
        return report
    }

    func close() async { await inner.close() }
}

/// A server in a child process; `port` is read from its first line.
struct ServerProcess {
    let pid: pid_t
    let port: Int
    let stdinFD: Int32

    /// Starts `path arguments` with a pipe on stdin (closing it stops the bench's own server) and waits for a
    /// line containing `listening on ...:PORT` / `listening on PORT`.
    static func start(_ path: String, _ arguments: [String]) throws -> ServerProcess {
        var input: [Int32] = [-1, -1]
        var output: [Int32] = [-1, -1]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw BenchError("pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO)
        for fd in input + output { posix_spawn_file_actions_addclose(&actions, fd) }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        close(input[0])
        close(output[1])
        guard rc == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))") }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(output[0], &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") {
                let text = String(decoding: line, as: UTF8.self)
                if text.contains("listening on") { break }
                line.removeAll()
            } else {
                line.append(byte)
            }
        }
        close(output[0])
        let text = String(decoding: line, as: UTF8.self)
        guard let port = text.split(whereSeparator: { $0 == ":" || $0 == " " }).last.flatMap({ Int($0) }) else {
            kill(pid, SIGTERM)
            throw BenchError("\(path) did not report a port: \(text)")
        }
        return ServerProcess(pid: pid, port: port, stdinFD: input[1])
    }

    func stop() {
        close(stdinFD)
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// Posts pre-serialized `/users/track` bodies back to back: the HTTP floor.
func rawHTTP(port: Int, apiKey: String, bodies: [[UInt8]], records: Int) async throws -> Double {
    let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
    let start = now()
    do {
        for body in bodies {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/users/track")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer " + apiKey)
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await client.execute(request, deadline: .now() + .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
            guard response.status.code == 201 else { throw BenchError("raw HTTP got \(response.status.code)") }
        }
    } catch {
        try? await client.shutdown()
        throw error
    }
    let rate = Double(records) / seconds(since: start)
    try await client.shutdown()
    return rate
}

func runHTTPScenario(_ settings: Settings, _ results: Results) async throws {
    let backlog = settings.quick ? 30_000 : 300_000
    let rounds = settings.quick ? 2 : 3
    // Claimed 300 at a time (`--batch-size 300`): four requests of 75 objects per claim, so the claim and ack
    // transactions are shared by four requests.
    let batchSize = Int(ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_HTTP_BATCH"] ?? "") ?? 300
    let apiKey = "bench-api-key"
    log("== 4. drain to HTTP /users/track: \(backlog) records, claims of \(batchSize), 75 objects per request")
    let template = freshPath(settings, "http-template")
    let work = freshPath(settings, "http-work")
    defer {
        removeDatabase(template)
        removeDatabase(work)
    }
    try fillQueue(path: template, count: backlog)

    // Bodies for the floor, built from the stored payloads exactly as they would be sent.
    let time = ISO8601.format(unixMilliseconds: WallClock.nowMilliseconds())
    var bodies: [[UInt8]] = []
    var index = 0
    while index < backlog {
        let end = min(backlog, index + 75)
        var body = Array(#"{"events":["#.utf8)
        for item in index..<end {
            if item > index { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: makePayload(item, time: time).utf8)
        }
        body.append(contentsOf: "]}".utf8)
        bodies.append(body)
        index = end
    }

    // Offline costs per record: parse + validate (OutgoingRecord.prepare) and serialization.
    let sample = min(backlog, 20_000)
    let claimed = (0..<sample).map { item in
        ClaimedRecord(
            id: Int64(item + 1), kind: .event, payload: makePayload(item, time: time),
            userKey: "external_id:user-\(item % 50)", createdAtMilliseconds: 0, attempts: 0)
    }
    var start = now()
    var outgoing: [OutgoingRecord] = []
    outgoing.reserveCapacity(sample)
    for record in claimed {
        if case .success(let prepared) = OutgoingRecord.prepare(record) { outgoing.append(prepared) }
    }
    let prepareNanosPerRecord = Double(now() - start) / Double(sample)
    start = now()
    var bytes: [UInt8] = []
    bytes.reserveCapacity(256 * batchSize)
    for (offset, record) in outgoing.enumerated() {
        if offset % 75 == 0 { bytes.removeAll(keepingCapacity: true) }
        record.object.serialize(into: &bytes)
    }
    let serializeNanosPerRecord = Double(now() - start) / Double(sample)

    var libraryRates: [Double] = []
    var rawRates: [Double] = []
    var sinkShares: [Double] = []
    var fakeBrazeRate: Double?
    let server = try ServerProcess.start(Settings.ownPath(), ["child-track-server", apiKey])
    defer { server.stop() }
    for round in 0..<rounds {
        try copyQueue(template, to: work)
        let rawRate = try await rawHTTP(port: server.port, apiKey: apiKey, bodies: bodies, records: backlog)
        let braze = BrazeSink(
            baseURL: "http://127.0.0.1:\(server.port)", apiKey: try BrazeAPIKey(apiKey), logger: quietLogger)
        let timing = TimingSink(braze)
        let drainStart = now()
        let result = try await libraryDrain(path: work, batchSize: batchSize, sink: timing)
        let total = seconds(since: drainStart)
        await braze.close()
        guard result.delivered == backlog else { throw BenchError("HTTP drain delivered \(result.delivered)") }
        libraryRates.append(result.perSecond)
        rawRates.append(rawRate)
        sinkShares.append(Double(timing.nanoseconds.withLock { $0 }) / 1e9 / total)
        log(
            "  round \(round + 1): library \(format(result.perSecond)) rec/s, raw HTTP \(format(rawRate)) rec/s")
    }
    // One run against fake-braze (checks the whole contract per request, with Foundation's JSON).
    if FileManager.default.isExecutableFile(atPath: settings.binDirectory + "/fake-braze") {
        let fake = try ServerProcess.start(
            settings.binDirectory + "/fake-braze", ["--port", "0", "--api-key", apiKey, "--max-seconds", "900"])
        defer { fake.stop() }
        try copyQueue(template, to: work)
        let braze = BrazeSink(
            baseURL: "http://127.0.0.1:\(fake.port)", apiKey: try BrazeAPIKey(apiKey), logger: quietLogger)
        let result = try await libraryDrain(path: work, batchSize: batchSize, sink: braze)
        await braze.close()
        fakeBrazeRate = result.perSecond
        log("  against fake-braze (full contract checks): \(format(result.perSecond)) rec/s")
    }
    let library = median(libraryRates)
    let raw = median(rawRates)
    let secondsPerRecord = 1 / library
    let sinkSeconds = median(sinkShares) * secondsPerRecord
    let serialization = serializeNanosPerRecord / 1e9
    let prepare = prepareNanosPerRecord / 1e9
    let breakdown: [String: Double] = [
        "serialization_us": serialization * 1e6,
        "http_us": max(0, sinkSeconds - serialization) * 1e6,
        "parse_validate_us": prepare * 1e6,
        "sqlite_and_scheduling_us": max(0, secondsPerRecord - sinkSeconds - prepare) * 1e6,
        "total_us": secondsPerRecord * 1e6,
    ]
    log(
        pad("drain to HTTP (75/request)", 38) + pad(format(raw), 12) + pad(format(library), 15)
            + pad(format(library / raw, decimals: 2), 8) + ">= 25000 rec/s \(library >= 25_000 ? "met" : "NOT MET")")
    log(
        "  per record: total \(format(secondsPerRecord * 1e6, decimals: 1)) us = SQLite+scheduling "
            + "\(format(breakdown["sqlite_and_scheduling_us"] ?? 0, decimals: 1)) + parse/validate "
            + "\(format(prepare * 1e6, decimals: 1)) + serialization \(format(serialization * 1e6, decimals: 1)) + HTTP "
            + "\(format(breakdown["http_us"] ?? 0, decimals: 1))")
    var row: [String: Any] = [
        "name": "drain to HTTP, 75 objects per request", "library_per_s": library, "raw_http_per_s": raw,
        "ratio_vs_raw_http": library / raw, "target_per_s": 25_000.0, "met": library >= 25_000, "backlog": backlog,
        "batch_size": batchSize,
        "library_rounds": libraryRates, "raw_rounds": rawRates, "breakdown": breakdown,
    ]
    if let fakeBrazeRate { row["fake_braze_per_s"] = fakeBrazeRate }
    results.scenarios["http"] = row
}
