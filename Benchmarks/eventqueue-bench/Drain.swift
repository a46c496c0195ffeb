// Scenario 3: drain a backlog to the null sink and to the JSONL sink, against a raw C-API loop that claims and
// deletes in the same batch size: BEGIN IMMEDIATE; the same claim UPDATE ... RETURNING (rows read out into
// Swift strings); DELETE by ids; COMMIT. For the JSONL comparison the raw loop also writes the stored payloads
// as the same JSON lines and fsyncs them before its COMMIT, as the sink does before its ack.
import CSQLite
import EventQueue
import EventQueueDelivery
import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The library's claim statement as it was before erasures (issue 31), with the probe naming the condition of the
/// partial index `records_user_order` as migration 8 defines it (SQLite uses a partial index only then): the floor
/// of a queue that has none. The library's claim also makes an erasure a barrier in its user's stream
/// (RecordStateSQL.claimWalk); the cost of those terms is part of what the ratio measures.
let claimSQL = """
    UPDATE records
    SET state = 'leased', lease_owner = ?1, lease_expires_at_ms = ?2
    WHERE id IN (
        SELECT r.id FROM records AS r INDEXED BY records_live
        WHERE r.state != 'dead'
          AND ((CASE r.state WHEN 'pending' THEN r.next_attempt_at_ms ELSE r.lease_expires_at_ms END) <= ?3
            OR (CASE r.state WHEN 'pending' THEN r.next_attempt_at_ms ELSE r.lease_expires_at_ms END) > ?5)
          AND NOT EXISTS (
              SELECT 1 FROM records AS e INDEXED BY records_user_order
              WHERE e.user_key = r.user_key AND e.id < r.id AND e.state != 'dead'
                AND ((e.dead_at_ms IS NULL AND (e.state = 'leased' OR e.next_attempt_at_ms > 0))
                    OR e.erasure IS NOT NULL OR e.other_user_key IS NOT NULL)
                AND (CASE e.state WHEN 'pending' THEN e.next_attempt_at_ms ELSE e.lease_expires_at_ms END)
                    BETWEEN ?3 + 1 AND ?5)
        ORDER BY r.id
        LIMIT ?4)
    RETURNING id, kind, payload, user_key, created_at_ms, attempts
    """

/// The library's claim walk itself (`RecordStateSQL.claimWalk`, package access) leasing what it finds, in the
/// raw loop's one statement: the price of its erasure terms is measured on its own, raw against raw, and cannot
/// drift from the library's.
let claimSQLWithErasures = """
    UPDATE records
    SET state = 'leased', lease_owner = ?1, lease_expires_at_ms = ?2
    WHERE id IN (SELECT id FROM (\(RecordStateSQL.claimWalk)))
    RETURNING id, kind, payload, user_key, created_at_ms, attempts
    """

let quietLogger: Logger = {
    var logger = Logger(label: "eventqueue-bench")
    logger.logLevel = .critical
    return logger
}()

/// The raw floor: claim + delete in one transaction per batch. Returns records per second.
func rawDrain(path: String, batchSize: Int, jsonlPath: String?, claimStatement: String = claimSQL) throws -> Double {
    let db = try openRaw(path, durability: .full)
    defer { sqlite3_close_v2(db) }
    let claim = try rawPrepare(db, claimStatement)
    let delete = try rawPrepare(db, "DELETE FROM records WHERE id IN (SELECT value FROM json_each(?1))")
    defer {
        sqlite3_finalize(claim)
        sqlite3_finalize(delete)
    }
    let fd = jsonlPath.map { open($0, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640) } ?? -1
    defer { if fd >= 0 { close(fd) } }
    let transient = eventqueue_sqlite_transient()
    var total = 0
    var sequence = 0
    let start = now()
    while true {
        sequence += 1
        let nowMs = WallClock.nowMilliseconds()
        try rawExec(db, "BEGIN IMMEDIATE")
        sqlite3_bind_text(claim, 1, "raw#\(sequence)", -1, transient)
        sqlite3_bind_int64(claim, 2, nowMs + 60_000)
        sqlite3_bind_int64(claim, 3, nowMs)
        sqlite3_bind_int64(claim, 4, Int64(batchSize))
        sqlite3_bind_int64(claim, 5, nowMs + 15 * 60 * 1_000)  // ClockHorizon.latestPlausible
        var ids: [Int64] = []
        var lines: [UInt8] = []
        while sqlite3_step(claim) == SQLITE_ROW {
            let id = sqlite3_column_int64(claim, 0)
            let kind = String(cString: sqlite3_column_text(claim, 1))
            let payload = String(cString: sqlite3_column_text(claim, 2))
            _ = String(cString: sqlite3_column_text(claim, 3))
            _ = sqlite3_column_int64(claim, 4)
            _ = sqlite3_column_int64(claim, 5)
            ids.append(id)
            if fd >= 0 {
                lines.append(contentsOf: #"{"id":"#.utf8)
                lines.append(contentsOf: String(id).utf8)
                lines.append(contentsOf: #","type":""#.utf8)
                lines.append(contentsOf: kind.utf8)
                lines.append(contentsOf: #"","object":"#.utf8)
                lines.append(contentsOf: payload.utf8)
                lines.append(contentsOf: "}\n".utf8)
            }
        }
        sqlite3_reset(claim)
        if ids.isEmpty {
            try rawExec(db, "COMMIT")
            break
        }
        if fd >= 0 {
            let written = lines.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == lines.count, fsync(fd) == 0 else { throw BenchError("raw jsonl write failed") }
        }
        let list = "[" + ids.map(String.init).joined(separator: ",") + "]"
        sqlite3_bind_text(delete, 1, list, -1, transient)
        guard sqlite3_step(delete) == SQLITE_DONE else {
            throw BenchError("raw delete: \(String(cString: sqlite3_errmsg(db)))")
        }
        sqlite3_reset(delete)
        try rawExec(db, "COMMIT")
        total += ids.count
    }
    return Double(total) / seconds(since: start)
}

/// The library: the Drainer (what `queued` and `queuectl drain --local` run) over a QueueStore. The pass's
/// closing maintenance (keys, vacuum, checkpoint; since issue 31 the scrub of the delivered records' bytes) is
/// timed apart, on the same connection right after the pass: the raw loop does none.
func libraryDrain(
    path: String, batchSize: Int, sink: any Sink
) async throws -> (perSecond: Double, delivered: Int, upkeepSeconds: Double) {
    let store = try QueueStore(path: path)
    let drainer = Drainer(
        store: store, sink: sink, options: DrainOptions(batchSize: batchSize, maintenanceAfterPass: false),
        logger: quietLogger)
    let start = now()
    let summary = try await drainer.drain()
    let rate = Double(summary.delivered) / seconds(since: start)
    let upkeepStart = now()
    _ = try await store.withConsumer { consumer throws(QueueError) in try consumer.admin.checkpointAndVacuum() }
    let upkeep = seconds(since: upkeepStart)
    await store.close()
    return (rate, summary.delivered, upkeep)
}

func runDrainScenario(_ settings: Settings, _ results: Results) async throws {
    let backlog = settings.quick ? 30_000 : 1_000_000
    // Three full rounds, not two: one slow stretch of the shared disk moved a two-round median by 0.07.
    let rounds = settings.quick ? min(settings.rounds, 3) : 3
    let batchSize = 100
    log("== 3. drain a \(backlog)-record backlog, batch \(batchSize), FULL; \(rounds) interleaved rounds")
    let template = freshPath(settings, "drain-template")
    defer { removeDatabase(template) }
    try fillQueue(path: template, count: backlog)
    let work = freshPath(settings, "drain-work")
    let jsonl = "\(settings.directory)/eventqueue-bench-\(getpid())-delivered.jsonl"
    defer {
        removeDatabase(work)
        unlink(jsonl)
    }
    let variants = ["raw", "null", "raw+erasure-claim", "raw+jsonl", "jsonl"]
    var rates: [String: [Double]] = [:]
    var upkeeps: [String: [Double]] = [:]
    for round in 0..<rounds {
        let order = round % 2 == 0 ? variants : variants.reversed()
        for variant in order {
            try copyQueue(template, to: work)
            unlink(jsonl)
            let rate: Double
            switch variant {
            case "raw": rate = try rawDrain(path: work, batchSize: batchSize, jsonlPath: nil)
            case "raw+erasure-claim":
                rate = try rawDrain(
                    path: work, batchSize: batchSize, jsonlPath: nil, claimStatement: claimSQLWithErasures)
            case "raw+jsonl": rate = try rawDrain(path: work, batchSize: batchSize, jsonlPath: jsonl)
            case "null":
                let result = try await libraryDrain(path: work, batchSize: batchSize, sink: NullSink())
                guard result.delivered == backlog else { throw BenchError("null drain delivered \(result.delivered)") }
                rate = result.perSecond
                upkeeps[variant, default: []].append(result.upkeepSeconds)
            default:
                let sink = try JSONLinesSink(path: jsonl)
                let result = try await libraryDrain(path: work, batchSize: batchSize, sink: sink)
                guard result.delivered == backlog else { throw BenchError("jsonl drain delivered \(result.delivered)") }
                rate = result.perSecond
                upkeeps[variant, default: []].append(result.upkeepSeconds)
            }
            rates[variant, default: []].append(rate)
            let upkeep = upkeeps[variant]?.last.map { ", upkeep after the pass \(format($0, decimals: 2)) s" } ?? ""
            log("  round \(round + 1) \(pad(variant, 10)) \(format(rate)) rec/s\(upkeep)")
        }
    }
    var rows: [[String: Any]] = []
    for (library, raw) in [("null", "raw"), ("jsonl", "raw+jsonl")] {
        let ratio = median(rates[library] ?? []) / median(rates[raw] ?? [])
        log(
            pad("drain to \(library) sink", 38) + pad(format(median(rates[raw] ?? [])), 12)
                + pad(format(median(rates[library] ?? [])), 15) + pad(format(ratio, decimals: 2), 8)
                + ">= 0.7 \(ratio >= 0.7 ? "met" : "NOT MET")")
        rows.append([
            "name": "drain to \(library) sink", "baseline": raw, "raw_per_s": median(rates[raw] ?? []),
            "library_per_s": median(rates[library] ?? []), "ratio": ratio, "target": 0.7, "met": ratio >= 0.7,
            "backlog": backlog, "batch_size": batchSize, "raw_rounds": rates[raw] ?? [],
            "library_rounds": rates[library] ?? [], "upkeep_seconds": median(upkeeps[library] ?? []),
        ])
    }
    // The claim's erasure terms priced alone: the raw loop with the library's claim of issue 31 against the one
    // without them, same rounds.
    let claimRatio = median(rates["raw+erasure-claim"] ?? []) / median(rates["raw"] ?? [])
    log(
        pad("raw loop, claim with erasure terms", 38) + pad(format(median(rates["raw"] ?? [])), 12)
            + pad(format(median(rates["raw+erasure-claim"] ?? [])), 15) + format(claimRatio, decimals: 2))
    results.scenarios["drain_claim"] = [
        "raw_per_s": median(rates["raw"] ?? []), "erasure_claim_per_s": median(rates["raw+erasure-claim"] ?? []),
        "ratio": claimRatio, "raw_rounds": rates["raw"] ?? [], "erasure_claim_rounds": rates["raw+erasure-claim"] ?? [],
    ]
    results.scenarios["drain"] = rows
}
