import EventQueue
import EventQueueDelivery
import NIOHTTP1
import EventQueueCommandLine

/// What each control request does. Queue reads go through `QueueStore` (its own executor), never the event
/// loop.
struct ControlRoutes: Sendable {
    let coordinator: LaunchCoordinator
    let store: QueueStore
    let sink: MeasuredSink
    let metrics: DaemonMetrics

    func respond(to request: HTTPRequestHead, writer: ResponseWriter) async throws {
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
                try await writer.send(
                    status: .badRequest, contentType: "application/json",
                    body: DaemonJSON.failure(invalid.message).serialized + "\n")
            }
        case (.GET, "/status"):
            try await status(writer)
        case (.GET, "/metrics"):
            try await scrape(writer)
        case (.POST, "/forget"):
            try await forget(query: query, writer)
        case (_, "/launch"), (_, "/status"), (_, "/metrics"), (_, "/forget"):
            try await writer.send(
                status: .methodNotAllowed, contentType: "application/json",
                body: DaemonJSON.failure("use POST /launch, GET /status, GET /metrics or POST /forget").serialized
                    + "\n")
        default:
            try await writer.send(
                status: .notFound, contentType: "application/json",
                body: DaemonJSON.failure(
                    "no such endpoint: use POST /launch, GET /status, GET /metrics or POST /forget"
                ).serialized + "\n")
        }
    }

    private func launchAndWait(_ writer: ResponseWriter) async throws {
        let events = await coordinator.launchAndFollow()
        try await writer.startStream(contentType: "application/x-ndjson")
        for await event in events {
            switch event {
            case .progress(let summary): try await writer.streamChunk(DaemonJSON.progress(summary).serialized + "\n")
            case .summary(let summary): try await writer.streamChunk(DaemonJSON.summary(summary).serialized + "\n")
            case .failed(let message, let cause):
                // A pass that never ran (the daemon is stopping) is an I/O failure for the follower (74).
                let status = cause.map(ExitStatus.init) ?? .ioError
                try await writer.streamChunk(DaemonJSON.failure(message, exitStatus: status).serialized + "\n")
            }
        }
        try await writer.endStream()
    }

    private func status(_ writer: ResponseWriter) async throws {
        let snapshot = await coordinator.snapshot()
        do {
            let stats = try await store.stats(includingKeys: true, includingErasures: true)
            let body = DaemonJSON.status(
                stats, path: store.path, daemon: snapshot, sinkName: sink.name, sink: sink.currentHealth,
                rate: await sink.rateStatus())
            try await writer.send(status: .ok, contentType: "application/json", body: body.serialized + "\n")
        } catch let error as QueueError {
            try await writer.send(
                status: .internalServerError, contentType: "application/json",
                body: DaemonJSON.failure(error.description).serialized + "\n")
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
        try await writer.send(
            status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
    }

    static func split(_ uri: String) -> (path: String, query: String) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, "") }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }
}
