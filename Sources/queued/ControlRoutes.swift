import EventQueue
import EventQueueDelivery
import NIOHTTP1
import EventQueueCommandLine
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// What each control request does. Queue reads go through `QueueStore` (its own executor), never the event
/// loop.
struct ControlRoutes: Sendable {
    let coordinator: LaunchCoordinator
    let store: QueueStore
    let sink: MeasuredSink
    let metrics: DaemonMetrics

    func respond(to request: HTTPRequestHead, writer: ResponseWriter, peer: PeerCredentials) async throws {
        let (path, query) = Self.split(request.uri)
        switch (request.method, path) {
        case (.POST, "/launch"):
            switch Result(catching: { () throws(LaunchQuery.Invalid) in try LaunchQuery.parse(query) }) {
            case .success(.wait):
                try await launchAndWait(writer)
            case .success(.accept):
                coordinator.launch()
                try await writer.send(status: .accepted, contentType: "application/json", body: "{\"accepted\":true}\n")
            case .failure(let invalid):
                try await writer.fail(.badRequest, invalid.message)
            }
        case (.GET, "/status"):
            try await status(writer)
        case (.GET, "/metrics"):
            try await scrape(writer)
        case (.POST, "/forget"):
            try await forget(query: query, writer, peer: peer)
        case (_, "/launch"), (_, "/status"), (_, "/metrics"), (_, "/forget"):
            try await writer.fail(.methodNotAllowed, "use POST /launch, GET /status, GET /metrics or POST /forget")
        default:
            try await writer.fail(
                .notFound, "no such endpoint: use POST /launch, GET /status, GET /metrics or POST /forget")
        }
    }

    /// What the `wait=true` stream carries: the pass's events, and a rate-limit wait found by the watch.
    private enum FollowedLine: Sendable {
        case pass(PassEvent)
        case waiting(untilMilliseconds: Int64)
    }

    /// Streams the next pass's progress and summary. It also tells the follower, once, when waiting for the end
    /// makes no sense: the pass met an unavailable sink (checked after every batch), or the sink
    /// waits for a rate-limit reset more than `longRateLimitWait` away (watched every second: a pass held by a
    /// window sends no progress). `queuectl drain --wait` then exits 11 with the reason; the pass goes on.
    private func launchAndWait(_ writer: ResponseWriter) async throws {
        let events = await coordinator.launchAndFollow()
        try await writer.startStream(contentType: "application/x-ndjson")
        let (lines, continuation) = AsyncStream.makeStream(of: FollowedLine.self)
        let forward = Task {
            for await event in events { continuation.yield(.pass(event)) }
            continuation.finish()
        }
        let watch = Task { [sink] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let until = await sink.rateStatus()?.waitingUntilMilliseconds else { continue }
                if until - WallClock.nowMilliseconds() > Self.longRateLimitWait {
                    continuation.yield(.waiting(untilMilliseconds: until))
                    return
                }
            }
        }
        defer {
            forward.cancel()
            watch.cancel()
        }
        var told = false
        for await line in lines {
            switch line {
            case .pass(.progress(let summary)):
                try await writer.streamChunk(DaemonJSON.progress(summary).serialized + "\n")
                if !told, let availability = await coordinator.snapshot().sink, availability.state == .unavailable,
                    let halt = coordinator.drainer.availability.halt()
                {
                    told = true
                    try await writer.streamChunk(
                        DaemonJSON.sinkUnavailable(availability, reason: halt.reason).serialized + "\n")
                }
            case .pass(.summary(let summary)):
                try await writer.streamChunk(DaemonJSON.summary(summary).serialized + "\n")
            case .pass(.failed(let message, let cause)):
                // A pass that never ran (the daemon is stopping) is an I/O failure for the follower (74).
                let status = cause.map(ExitStatus.init) ?? .ioError
                try await writer.streamChunk(DaemonJSON.failure(message, exitStatus: status).serialized + "\n")
            case .waiting(let until):
                guard !told else { continue }
                told = true
                let reason =
                    "Braze's rate limit holds every request until \(ISO8601.format(unixMilliseconds: until)); "
                    + "records are kept and go out when the limit allows"
                try await writer.streamChunk(DaemonJSON.waiting(until: until, reason: reason).serialized + "\n")
            }
        }
        try await writer.endStream()
    }

    /// A rate-limit wait longer than this (milliseconds) ends a `drain --wait` at once: a reset one
    /// window away (3 s) is normal pacing; an hourly limit or a long `Retry-After` is not worth waiting for.
    static let longRateLimitWait: Int64 = 60_000

    private func status(_ writer: ResponseWriter) async throws {
        let snapshot = await coordinator.snapshot()
        do {
            let stats = try await store.stats(includingKeys: true, includingErasures: true)
            let body = DaemonJSON.status(
                stats, path: store.path, daemon: snapshot, sinkName: sink.name, sink: sink.currentHealth,
                rate: await sink.rateStatus())
            try await writer.send(.ok, json: body)
        } catch let error as QueueError {
            try await writer.fail(.internalServerError, error.description)
        }
    }

    private func scrape(_ writer: ResponseWriter) async throws {
        if let stats = try? await store.stats(includingKeys: true, includingErasures: true) {
            metrics.recordStats(stats)
            metrics.recordErasures(stats)
        }
        let highest = try? await store.withConsumer { consumer throws(QueueError) in
            try consumer.admin.highestAssignedID()
        }
        if let highest { metrics.recordHighestID(highest) }
        metrics.recordWriteLine(WriteLineReport.read(queuePath: store.path))
        if let rate = await sink.rateStatus() { metrics.recordRate(rate) }
        if let availability = await coordinator.snapshot().sink { metrics.recordSinkAvailability(availability) }
        try await writer.send(
            status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.registry.emitToString())
    }

    static func split(_ uri: String) -> (path: String, query: String) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, "") }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }
}

/// The query of `POST /launch`, parsed rather than searched for (so `?nowait=true` is not `?wait=true`). `wait` is
/// the only parameter: `true`/`1` streams the pass (progress and summary), `false`/`0` or no `wait`
/// answers 202 at once. Any other value, another parameter, or `wait` given twice is refused with 400, so a
/// mistyped request never does something other than what was asked.
enum LaunchQuery: Equatable {
    case accept
    case wait

    struct Invalid: Error, Equatable {
        var message: String
    }

    static func parse(_ query: String) throws(Invalid) -> LaunchQuery {
        var wait: Bool?
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let value = parts.count > 1 ? String(parts[1]) : nil
            guard name == "wait" else {
                throw Invalid(
                    message: "unknown parameter \"\(escapedPrefix(name))\": POST /launch takes only wait=true|false")
            }
            guard wait == nil else { throw Invalid(message: "wait given twice") }
            switch value {
            case "true", "1": wait = true
            case "false", "0": wait = false
            default:
                throw Invalid(
                    message:
                        "wait=\(escapedPrefix(value ?? "")) is not valid: use wait=true (or 1) or wait=false (or 0)")
            }
        }
        return wait == true ? .wait : .accept
    }

    private static func escapedPrefix(_ text: String) -> String {
        String(text.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.%".contains($0)) ? $0 : "?" })
    }
}

/// `POST /forget?external_id=u1&braze_delete=true` (`ForgetRequest`): one user forgotten as `queuectl forget` does,
/// on a connection of its own on a thread of its own, never on the store's executor: the scrub holds the write lock
/// for up to a quarter of the busy timeout, and acks, claims and lease renewals must not wait behind it. The user's
/// records in flight are deleted too, and the erasure waits for their requests (its `after`). With a Braze delete
/// it launches a pass, so the deletion goes out now.
extension ControlRoutes {
    func forget(query: String, _ writer: ResponseWriter, peer: PeerCredentials) async throws {
        let request: ForgetRequest
        do {
            request = try ForgetRequest(parsing: query)
        } catch {
            try await writer.fail(.badRequest, error.description, exitStatus: .usage)
            return
        }
        if request.brazeDelete, !PeerPolicy.admins(daemonUID: getuid()).allows(peer) {
            try await writer.fail(
                .forbidden,
                "uid \(peer.uid) may not delete users at Braze: only root, the daemon's user and members of "
                    + "\(ErasureKey.adminGroup) may; forget without braze_delete removes the user from this queue "
                    + "only (nothing was changed)", exitStatus: .refused)
            return
        }
        do {
            let path = store.path
            let report = try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(
                        with: Result { () throws(QueueError) -> ForgetReport in
                            let queue = try QueueWriter(path: path)
                            defer { queue.close() }
                            return try queue.forget([request.user], brazeDelete: request.brazeDelete)
                        })
                }
            }
            if !report.erasureIDs.isEmpty { coordinator.launch() }
            try await writer.send(.ok, json: .object(ForgetReportJSON.json(report, by: .daemon)))
        } catch let error as QueueError {
            let status = ExitStatus(error)
            let answer: HTTPResponseStatus =
                status == .invalidInput ? .badRequest : status == .busy ? .serviceUnavailable : .internalServerError
            try await writer.fail(answer, error.description, exitStatus: status)
        }
    }
}
