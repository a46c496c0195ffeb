import ArgumentParser
import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract:
            "Counts of pending, leased and dead records, the oldest pending record's age, file sizes, the writers' line.",
        discussion: """
            When a daemon serving this queue answers on its control socket (--socket, else $EVENTQUEUE_SOCKET, \
            else the default path, if it exists), its Braze sink's rate-limit state is shown too: the last \
            X-RateLimit-Remaining and -Limit, the reset, the wait in force, and the 429s it met; and whether its sink \
            is available or, since when, unavailable, with the last error and the next probe.
            """)

    @Flag(
        help: """
            Print JSON: pending, leased, dead, oldest_pending_age_seconds, db_bytes, wal_bytes, schema_version, \
            remembered_keys, remembered_key_bytes, erasures_pending, erasures_dead, erasures_unauthorized, \
            scrub_owed_since (a forget whose bytes are not gone yet, or null), held_users (count, keys: users \
            waiting behind a dead erasure or identity call), writers_line (state, reason, \
            busy, waiting, held_seconds, handoffs, passed_over, repairs, bypasses), rate_limit (the daemon's, or \
            null), sink (the daemon's: state, since, last_error, next_probe_at, probes; or null), queue_bytes, \
            limits (max_queue_bytes, when_full, max_age_seconds, set_at), dropped (oldest, refused, expired).
            """)
    var json = false

    @Option(help: "The daemon's control socket, asked for its rate-limit state (default: as for drain).")
    var socket: String?

    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let now = WallClock.nowMilliseconds()
        let (stats, path, line) = try queue.withAdmin { admin in
            (try admin.stats(now: now, includingKeys: true, includingErasures: true), admin.path, admin.writeLine)
        }
        // The daemon's `daemon.sink` (its availability and `rate_limit`), when a daemon serves this very file.
        let daemonSink = Self.servingDaemon(socket: socket, queuePath: path)?.status["daemon"]?.objectValue?[
            "sink"]?.objectValue
        let rate = daemonSink?["rate_limit"].flatMap { $0 == .null ? nil : $0 }
        let sink = daemonSink.flatMap(Self.availability)
        if json {
            var object = ReportJSON.stats(stats, path: path, line: line)
            object["rate_limit"] = rate ?? .null
            object["sink"] = sink.map(JSONValue.object) ?? .null
            writeStandardOutput(JSONValue.object(object).serialized + "\n")
            return
        }
        var lines = [
            "queue:          \(path)",
            "schema version: \(stats.schemaVersion)",
            "pending:        \(stats.pending)",
            "leased:         \(stats.leased)",
            "dead:           \(stats.dead)",
        ]
        if let age = stats.oldestPendingAgeSeconds {
            lines.append("oldest pending: \(Self.formatSeconds(age)) ago")
        }
        if let retry = stats.nextRetryAtMilliseconds {
            lines.append("next retry:     in \(Self.formatSeconds(Double(retry - now) / 1000))")
        }
        lines.append("file size:      \(stats.databaseBytes) bytes (wal \(stats.walBytes) bytes)")
        lines += Self.limitLines(stats)
        lines.append(
            "keys:           \(stats.rememberedKeys) remembered, about \(stats.rememberedKeyBytes) bytes "
                + "(`queuectl keys prune --older-than 1d` forgets them sooner)")
        if stats.erasuresPending + stats.erasuresDead > 0 {
            lines.append(
                "erasures:       \(stats.erasuresPending) waiting, \(stats.erasuresDead) dead"
                    + (stats.erasuresUnauthorized > 0
                        ? ", \(stats.erasuresUnauthorized) of them not authorized (planted: never sent)" : "")
                    + " (`queuectl peek`)")
        }
        if stats.heldUsers > 0 {
            lines.append(
                "held users:     \(stats.heldUsers) wait behind a dead erasure or identity call ("
                    + stats.heldUserKeys.joined(separator: ", ")
                    + (stats.heldUsers > stats.heldUserKeys.count ? ", ..." : "")
                    + "): `queuectl dead retry` or `dead purge` of it lets them go")
        }
        if let owed = stats.scrubOwedSinceMilliseconds {
            lines.append(
                "scrub owed:     the bytes of users forgotten up to \(ISO8601.format(unixMilliseconds: owed)) are not "
                    + "gone yet: the file is rebuilt once that fits a quarter of the busy timeout")
        }
        lines.append("writers' line:  \(line.summary)")
        if let rate = rate?.objectValue { lines.append("braze limit:    " + Self.describe(rate)) }
        if let sink { lines.append("sink:           " + Self.describe(sink: sink)) }
        writeStandardOutput(lines.joined(separator: "\n") + "\n")
    }

    /// The daemon on `socket` (default: as for drain) and its status, when it answers within 2 s and serves this
    /// very file; `nil` otherwise (no daemon, another queue). Never creates the default socket's directory.
    static func servingDaemon(socket: String?, queuePath: String) -> (client: DaemonClient, status: JSONObject)? {
        let socketPath = QueueEnvironment.socketPath(explicit: socket, createDirectory: false)
        let client = DaemonClient(socketPath: socketPath)
        guard access(socketPath, F_OK) == 0, let status = try? client.status(timeoutSeconds: 2).objectValue,
            let served = status["path"]?.stringValue, sameFile(served, queuePath)
        else { return nil }
        return (client, status)
    }

    /// The availability part of the daemon's `daemon.sink`; `nil` for a daemon of a release without it.
    static func availability(_ sink: JSONObject) -> JSONObject? {
        guard let state = sink["state"], state != .null else { return nil }
        var object: JSONObject = ["state": state]
        for key in ["since", "last_error", "next_probe_at", "probes"] { object[key] = sink[key] ?? .null }
        return object
    }

    /// "available since …", or "unavailable since … (last error: …); next probe at …; 3 probes".
    static func describe(sink: JSONObject) -> String {
        let state = sink["state"]?.stringValue ?? "unknown"
        var text = state + (sink["since"]?.stringValue.map { " since \($0)" } ?? "")
        guard state == "unavailable" else { return text }
        if let error = sink["last_error"]?.stringValue { text += " (last error: \(ExternalText.escaped(error)))" }
        if let next = sink["next_probe_at"]?.stringValue { text += "; next probe at \(next)" }
        let probes = sink["probes"]?.numberValue?.integerValue.flatMap { Int(exactly: $0) } ?? 0
        return text + "; \(probes) probe\(probes == 1 ? "" : "s") so far; records kept, no attempt counted"
    }

    static func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return a == b }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// One line: "149 of 150 left, resets 2026-…; waiting until …; 3 answered 429 in 1 round".
    static func describe(_ rate: JSONObject) -> String {
        func integer(_ key: String) -> Int? { rate[key]?.numberValue?.integerValue.flatMap { Int(exactly: $0) } }
        var parts: [String] = []
        if let remaining = integer("remaining"), let limit = integer("limit") {
            parts.append(
                "\(remaining) of \(limit) left" + (rate["reset_at"]?.stringValue.map { ", resets \($0)" } ?? ""))
        } else {
            parts.append("no X-RateLimit headers seen yet")
        }
        if let until = rate["waiting_until"]?.stringValue { parts.append("waiting until \(until)") }
        let answers = integer("rate_limited_requests") ?? 0
        let rounds = integer("rate_limit_rounds") ?? 0
        parts.append("\(answers) answered 429 in \(rounds) round\(rounds == 1 ? "" : "s")")
        return parts.joined(separator: "; ")
    }

    static func formatSeconds(_ seconds: Double) -> String {
        if seconds < 120 { return "\(Int(seconds.rounded())) s" }
        if seconds < 7200 { return "\(Int((seconds / 60).rounded())) min" }
        return "\(Int((seconds / 3600).rounded())) h"
    }

    /// The lines for the limits: the size against the limit, the max age, and what the queue gave up (`dropped`,
    /// for good: every writer process and the daemon, since the file was created).
    static func limitLines(_ stats: QueueStats) -> [String] {
        let limits = stats.limits ?? QueueLimits()
        var size = "\(stats.queueBytes) bytes in use"
        if limits.maxQueueBytes > 0 {
            let percent = Int((Double(stats.queueBytes) * 100 / Double(limits.maxQueueBytes)).rounded())
            size += " of a \(limits.maxQueueBytes)-byte limit (\(percent) %); when full: \(limits.whenFull.rawValue)"
        } else {
            size += "; no size limit"
        }
        let age =
            limits.maxAgeSeconds > 0
            ? "\(formatSeconds(Double(limits.maxAgeSeconds))) (a pending record older becomes a dead letter)"
            : "none (records are kept until delivered)"
        let recorded = stats.limits == nil ? " (no daemon has recorded limits in this file)" : ""
        return [
            "queue size:     " + size + recorded,
            "max age:        " + age,
            "dropped:        oldest \(stats.drops.oldest), refused \(stats.drops.refused), expired "
                + "\(stats.drops.expired) (since the file was created)",
        ]
    }
}
