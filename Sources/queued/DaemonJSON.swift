import EventQueue
import EventQueueBraze
import EventQueueDelivery
import EventQueueCommandLine

/// The JSON bodies of the control socket, built with the queue's own JSON model. The queue keys match
/// `queuectl status --json` and the summary keys match `queuectl drain --local --json`, so scripts parse both
/// the same way.
enum DaemonJSON {
    static func string(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }

    static func progress(_ summary: DrainSummary) -> JSONValue {
        [
            "event": "progress",
            "delivered": ReportJSON.number(summary.delivered),
            "retried": ReportJSON.number(summary.retried),
            "dead": ReportJSON.number(summary.dead),
            "batches": ReportJSON.number(summary.batches),
            "in_flight": ReportJSON.number(summary.inFlight),
        ]
    }

    static func summary(_ summary: DrainSummary) -> JSONValue {
        var object: JSONObject = ["event": "summary"]
        for member in ReportJSON.summary(summary) { object[member.key] = member.value }
        return .object(object)
    }

    /// An error, with the exit status a follower should end with, when there is one (`exit_status`: 75 when the
    /// queue was busy), so `queuectl drain --wait` exits as `drain --local` would.
    static func failure(_ message: String, exitStatus: ExitStatus? = nil) -> JSONValue {
        var object: JSONObject = ["event": "error", "message": .string(message)]
        if let exitStatus { object["exit_status"] = ReportJSON.number(Int(exitStatus.rawValue)) }
        return .object(object)
    }

    static func status(
        _ stats: QueueStats, path: String, daemon: LaunchSnapshot, sinkName: String, sink: SinkHealth,
        rate: BrazeRateStatus? = nil
    ) -> JSONValue {
        var object = ReportJSON.stats(stats, path: path, line: WriteLineReport.read(queuePath: path))
        var sinkObject: JSONObject = [
            "name": .string(sinkName), "healthy": .bool(sink.healthy), "last_error": string(sink.lastError),
            "rate_limit": rate.map(rateLimit) ?? .null,
        ]
        if let availability = daemon.sink {
            for member in self.availability(availability) { sinkObject[member.key] = member.value }
            // While unavailable, the error that made it so (or the last probe's) is the one to show.
            if availability.state == .unavailable, let error = availability.lastError {
                sinkObject["last_error"] = .string(error)
            }
        }
        object["daemon"] = [
            "state": .string(daemon.state.rawValue),
            "passes": ReportJSON.number(daemon.passes),
            "in_flight": ReportJSON.number(daemon.inFlight),
            "last_pass": daemon.lastPass.map(pass) ?? .null,
            "sink": .object(sinkObject),
            "next_retry_at": ReportJSON.time(daemon.nextRetryAtMilliseconds),
            "last_error": string(daemon.lastError),
        ]
        return .object(object)
    }

    /// Whether the sink is available: `state` ("available" or "unavailable"), `since`, `next_probe_at`
    /// (null while available), `probes` (in this outage), `failures_in_a_row`, `probing`.
    static func availability(_ snapshot: SinkAvailability.Snapshot) -> JSONObject {
        [
            "state": .string(snapshot.state.rawValue),
            "since": ReportJSON.time(snapshot.sinceMilliseconds),
            "next_probe_at": ReportJSON.time(snapshot.nextProbeAtMilliseconds),
            "probes": ReportJSON.number(snapshot.probes),
            "failures_in_a_row": ReportJSON.number(snapshot.failuresInARow),
            "probing": .bool(snapshot.probing),
        ]
    }

    /// `POST /launch?wait=true`: the followed pass met an unavailable sink; `queuectl drain --wait` stops waiting
    /// and exits 11 with `reason` (the daemon's pass goes on).
    static func sinkUnavailable(_ snapshot: SinkAvailability.Snapshot, reason: String) -> JSONValue {
        var object = availability(snapshot)
        object["event"] = "sink_unavailable"
        object["last_error"] = string(snapshot.lastError)
        object["reason"] = .string(reason)
        return .object(object)
    }

    /// `POST /launch?wait=true`: the sink waits for a rate-limit reset more than a minute away; `queuectl drain
    /// --wait` stops waiting and exits 11 with `reason` (the daemon's pass goes on).
    static func waiting(until milliseconds: Int64, reason: String) -> JSONValue {
        ["event": "waiting", "until": ReportJSON.time(milliseconds), "reason": .string(reason)]
    }

    /// The Braze sink's view of the workspace's rate limit: the last `X-RateLimit-*` reading, the wait now in
    /// force, and what 429s it met (`rate_limited_requests` answers in `rate_limit_rounds` rounds of waiting).
    static func rateLimit(_ rate: BrazeRateStatus) -> JSONValue {
        [
            "limit": rate.limit.map { ReportJSON.number($0) } ?? .null,
            "remaining": rate.remaining.map { ReportJSON.number($0) } ?? .null,
            "reset_at": ReportJSON.time(rate.resetAtMilliseconds),
            "waiting_until": ReportJSON.time(rate.waitingUntilMilliseconds),
            "rate_limited_requests": ReportJSON.number(rate.rateLimitedRequests),
            "rate_limit_rounds": ReportJSON.number(rate.rateLimitRounds),
            "waits": ReportJSON.number(rate.rateLimitWaits),
            "wait_seconds": JSONNumber(rate.rateLimitWaitSeconds).map(JSONValue.number) ?? .null,
            "requests_in_flight": ReportJSON.number(rate.requestsInFlight),
            "send_window": ReportJSON.number(rate.window),
        ]
    }

    static func pass(_ pass: PassRecord) -> JSONValue {
        [
            "started_at": ReportJSON.time(pass.startedAtMilliseconds),
            "ended_at": ReportJSON.time(pass.endedAtMilliseconds),
            "result": .string(pass.summary?.result.rawValue ?? "error"),
            "delivered": ReportJSON.number(pass.summary?.delivered ?? 0),
            "retried": ReportJSON.number(pass.summary?.retried ?? 0),
            "dead": ReportJSON.number(pass.summary?.dead ?? 0),
            "halt": string(pass.summary?.halt?.description ?? pass.error),
        ]
    }
}
