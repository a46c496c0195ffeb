// Scenario 1: enqueue throughput of the EventQueue library against the floor, a raw SQLite C-API loop inserting
// the same rows into the same schema with the same pragmas. Both run in this process, interleaved round by
// round, and the report is the ratio of medians, because absolute numbers on shared machines drift.
import CSQLite
import EventQueue

#if canImport(Glibc)
    import Glibc
#endif

struct EnqueueScenario {
    var name: String
    var durability: QueueOptions.Durability
    var recordsPerTransaction: Int
    var records: Int
    var target: Double
    /// Each record with its own idempotency key (`key-N`). The raw floor then runs 1.1.0's keyed INSERT (the global
    /// key, `delivered_keys` probed, `ON CONFLICT ... DO NOTHING RETURNING id`), so the ratio prices the per-user
    /// key rule (issue 22 #6: digest, user, two more probes) against what a keyed insert cost before it.
    var keyed = false
    /// The limits recorded in the file before the clock starts (issue 30; `runLimitCostScenario`): the library then
    /// reads the size limit in every transaction and measures the file after every record (`SpaceKeeper`).
    var limits: QueueLimits? = nil
}

func makeRecord(_ index: Int, keyed: Bool) -> Record {
    var record = makeRecord(index)
    if keyed { record.idempotencyKey = "key-\(index)" }
    return record
}

/// One timed run: records per second, and the CPU per record (user + system, this thread): load moves the wall-clock
/// rates of the FULL scenarios a lot (every fsync waits for the shared disk), the CPU a record costs much less.
struct EnqueueRun {
    var perSecond: Double
    var cpuMicroseconds: Double

    init(records: Int, since start: UInt64, cpuSince cpuStart: Double) {
        perSecond = Double(records) / seconds(since: start)
        cpuMicroseconds = (threadCPUSeconds() - cpuStart) * 1e6 / Double(records)
    }
}

/// The library: build a record, validate, serialize, insert (what a writer does per record).
func runLibrary(_ scenario: EnqueueScenario, path: String) throws -> EnqueueRun {
    let writer = try QueueWriter(
        path: path, options: QueueOptions(durability: scenario.durability, minimumFreeBytes: 0))
    defer { writer.close() }
    if let limits = scenario.limits {
        let admin = try QueueAdmin(path: path)
        try admin.recordLimits(limits)
        admin.close()
    }
    let start = WallClock.monotonicNanoseconds()
    let cpuStart = threadCPUSeconds()
    if scenario.recordsPerTransaction == 1 {
        for index in 0..<scenario.records { try writer.enqueue(makeRecord(index, keyed: scenario.keyed)) }
    } else {
        var index = 0
        while index < scenario.records {
            let count = min(scenario.recordsPerTransaction, scenario.records - index)
            try writer.enqueue(contentsOf: (index..<(index + count)).map { makeRecord($0, keyed: scenario.keyed) })
            index += count
        }
    }
    return EnqueueRun(records: scenario.records, since: start, cpuSince: cpuStart)
}

/// The floor: the same schema (created by the library, then closed), the same pragmas, one prepared INSERT,
/// and payloads serialized before the clock starts.
func runRaw(_ scenario: EnqueueScenario, path: String) throws -> EnqueueRun {
    try QueueWriter(path: path, options: QueueOptions(durability: scenario.durability, minimumFreeBytes: 0)).close()
    var handle: OpaquePointer?
    guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
        let db = handle
    else { throw BenchError("cannot open \(path)") }
    defer { sqlite3_close_v2(db) }
    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
    }
    sqlite3_busy_timeout(db, 5000)
    try exec("PRAGMA journal_mode = WAL")
    try exec("PRAGMA synchronous = \(scenario.durability == .full ? "FULL" : "NORMAL")")
    try exec("PRAGMA journal_size_limit = \(32 * 1024 * 1024)")
    try exec("PRAGMA temp_store = MEMORY")
    let now = WallClock.nowMilliseconds()
    let time = ISO8601.format(unixMilliseconds: now)
    let payloads: [String] = (0..<scenario.records).map { index in
        var object = makeRecord(index).object
        object["time"] = .string(time)
        return object.serialized
    }
    var statement: OpaquePointer?
    guard
        sqlite3_prepare_v2(
            db,
            scenario.keyed
                ? """
                INSERT INTO records (kind, payload, created_at_ms, idempotency_key)
                SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM delivered_keys WHERE idempotency_key = ?4)
                ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
                RETURNING id
                """ : "INSERT INTO records (kind, payload, created_at_ms) VALUES (?1, ?2, ?3)", -1, &statement, nil)
            == SQLITE_OK, let insert = statement
    else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
    defer { sqlite3_finalize(insert) }
    let transient = eventqueue_sqlite_transient()
    let start = WallClock.monotonicNanoseconds()
    let cpuStart = threadCPUSeconds()
    var index = 0
    while index < scenario.records {
        let count = min(scenario.recordsPerTransaction, scenario.records - index)
        // A keyed insert is a transaction of its own in the library too (insert, or look the key up).
        if scenario.recordsPerTransaction > 1 || scenario.keyed { try exec("BEGIN IMMEDIATE") }
        for offset in 0..<count {
            sqlite3_bind_text(insert, 1, "event", -1, transient)
            sqlite3_bind_text(insert, 2, payloads[index + offset], -1, transient)
            sqlite3_bind_int64(insert, 3, now)
            if scenario.keyed {
                sqlite3_bind_text(insert, 4, "key-\(index + offset)", -1, transient)
                guard sqlite3_step(insert) == SQLITE_ROW else {
                    throw BenchError(String(cString: sqlite3_errmsg(db)))
                }
            }
            guard sqlite3_step(insert) == SQLITE_DONE else {
                throw BenchError(String(cString: sqlite3_errmsg(db)))
            }
            sqlite3_reset(insert)
        }
        if scenario.recordsPerTransaction > 1 || scenario.keyed { try exec("COMMIT") }
        index += count
    }
    return EnqueueRun(records: scenario.records, since: start, cpuSince: cpuStart)
}

func runEnqueueScenarios(_ settings: Settings, _ results: Results) throws {
    let scale = settings.quick ? 1 : 4
    let scenarios = [
        EnqueueScenario(
            name: "enqueue, 1 per transaction, FULL", durability: .full, recordsPerTransaction: 1, records: 500 * scale,
            target: 0.85),
        EnqueueScenario(
            name: "enqueue, 1 per transaction, NORMAL", durability: .normal, recordsPerTransaction: 1,
            records: 5_000 * scale, target: 0.85),
        EnqueueScenario(
            name: "enqueue, 100 per transaction, FULL", durability: .full, recordsPerTransaction: 100,
            records: 20_000 * scale, target: 0.85),
        EnqueueScenario(
            name: "keyed enqueue, 1 per tx, FULL", durability: .full, recordsPerTransaction: 1,
            records: 500 * scale, target: 0.85, keyed: true),
        EnqueueScenario(
            name: "keyed enqueue, 1 per tx, NORMAL", durability: .normal, recordsPerTransaction: 1,
            records: 5_000 * scale, target: 0.85, keyed: true),
    ]

    log("== 1. enqueue: library vs raw SQLite C API, same schema and pragmas; \(settings.rounds) interleaved rounds")
    log(pad("scenario", 38) + pad("raw rec/s", 12) + pad("library rec/s", 15) + pad("ratio", 8) + "target")
    var rows: [[String: Any]] = []
    for scenario in scenarios {
        var raw: [Double] = []
        var library: [Double] = []
        var rawCPU: [Double] = []
        var libraryCPU: [Double] = []
        for round in 0..<settings.rounds {
            let rawPath = freshPath(settings, "raw-\(round)")
            let libraryPath = freshPath(settings, "lib-\(round)")
            // Alternate which goes first so neither always gets the warmer cache.
            for side in round % 2 == 0 ? [0, 1] : [1, 0] {
                if side == 0 {
                    let run = try runRaw(scenario, path: rawPath)
                    (raw, rawCPU) = (raw + [run.perSecond], rawCPU + [run.cpuMicroseconds])
                } else {
                    let run = try runLibrary(scenario, path: libraryPath)
                    (library, libraryCPU) = (library + [run.perSecond], libraryCPU + [run.cpuMicroseconds])
                }
            }
            removeDatabase(rawPath)
            removeDatabase(libraryPath)
        }
        let ratio = median(library) / median(raw)
        let met = ratio >= scenario.target
        rows.append([
            "name": scenario.name, "raw_per_s": median(raw), "library_per_s": median(library), "ratio": ratio,
            "target": scenario.target, "met": met, "records": scenario.records, "raw_rounds": raw,
            "library_rounds": library, "raw_cpu_us": median(rawCPU), "library_cpu_us": median(libraryCPU),
        ])
        log(
            pad(scenario.name, 38) + pad(format(median(raw)), 12) + pad(format(median(library)), 15)
                + pad(format(ratio, decimals: 2), 8) + pad(">= \(scenario.target) \(met ? "met" : "NOT MET")", 17)
                + "CPU µs/rec raw \(format(median(rawCPU), decimals: 1)), library "
                + format(median(libraryCPU), decimals: 1))
    }
    results.scenarios["enqueue"] = rows
}

/// `limits` (run only when named): what the size limit costs a writer, library against library in the same rounds
/// (no limit, a 1 GiB limit never reached, a 1 MiB limit reached under drop-oldest), interleaved and rotated so
/// that none always goes first; ratio of medians to the library without a limit. Section 1's raw floor would add
/// its own noise to a difference this small.
func runLimitCostScenario(_ settings: Settings, _ results: Results) throws {
    let rounds = max(settings.rounds, 9)
    let variants: [(label: String, limits: QueueLimits?)] = [
        ("no limit", nil), ("1 GiB limit, never reached", QueueLimits(maxQueueBytes: 1 << 30)),
        ("1 MiB limit, drop-oldest, full", QueueLimits(maxQueueBytes: 1 << 20, whenFull: .dropOldest)),
    ]
    let shapes: [(name: String, durability: QueueOptions.Durability, perTransaction: Int, records: Int)] = [
        ("1 per transaction, FULL", .full, 1, settings.quick ? 300 : 1_000),
        ("1 per transaction, NORMAL", .normal, 1, settings.quick ? 3_000 : 10_000),
        ("100 per transaction, FULL", .full, 100, settings.quick ? 10_000 : 40_000),
    ]
    log("== limits: library with and without a size limit, \(rounds) rounds, rotated; ratio of medians to no limit")
    log(pad("scenario", 30) + pad("limit", 34) + pad("rec/s", 10) + "vs no limit")
    var rows: [[String: Any]] = []
    for shape in shapes {
        var rates: [[Double]] = Array(repeating: [], count: variants.count)
        for round in 0..<rounds {
            for offset in 0..<variants.count {
                let index = (round + offset) % variants.count
                let scenario = EnqueueScenario(
                    name: shape.name, durability: shape.durability, recordsPerTransaction: shape.perTransaction,
                    records: shape.records, target: 0, limits: variants[index].limits)
                let path = freshPath(settings, "limits-\(round)-\(index)")
                rates[index].append(try runLibrary(scenario, path: path).perSecond)
                removeDatabase(path)
            }
        }
        let base = median(rates[0])
        for (index, variant) in variants.enumerated() {
            let ratio = median(rates[index]) / base
            rows.append([
                "name": shape.name, "limit": variant.label, "per_s": median(rates[index]), "ratio": ratio,
                "rounds": rates[index],
            ])
            log(
                pad(shape.name, 30) + pad(variant.label, 34) + pad(format(median(rates[index])), 10)
                    + format(ratio, decimals: 3))
        }
    }
    results.scenarios["limits"] = rows
}
