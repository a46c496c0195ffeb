// Shared helpers for the scenarios: settings, timing, statistics, processes, RSS, JSON results.
import CSQLite
import EventQueue
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Command-line settings shared by every scenario.
struct Settings: Sendable {
    var quick = false
    /// Rounds of the enqueue scenarios (interleaved, raw and library alternating first). Nine, not five: single
    /// rounds on this shared disk ranged from 0.71 to 1.12 (library / raw), and a median of nine moves less between runs.
    var rounds = 9
    var directory = "/tmp"
    var binDirectory = Settings.ownDirectory()
    var python = "python3"
    /// Where `persistqueue_peer.py` lives (scripts/bench-support).
    var supportDirectory = "scripts/bench-support"
    var outputPath: String?
    /// The minimal writer built with `-static-stdlib` (scripts/bench builds it), shown beside the default build.
    var staticWriter: String?
    /// `queuectl` built with `-static-stdlib`, as the Debian package ships it (scripts/bench builds it): the cold
    /// path's `queuectl enqueue` as operators run it (issue 34).
    var staticQueuectl: String?
    /// Examples/c/writer.c built with `cc -O2` (scripts/bench builds it): the cold path's C-API writer.
    var cWriter: String?
    var scenarios: [String] = []
    /// Arguments after the scenario name (child modes).
    var rest: [String] = []

    static func ownDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return ".build/release" }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (path as NSString).deletingLastPathComponent
    }
}

func seconds(since start: UInt64) -> Double {
    Double(WallClock.monotonicNanoseconds() - start) / 1e9
}

func now() -> UInt64 { WallClock.monotonicNanoseconds() }

func freshPath(_ settings: Settings, _ label: String) -> String {
    let path = "\(settings.directory)/eventqueue-bench-\(getpid())-\(label).db"
    removeDatabase(path)
    return path
}

func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm", "-turn", "-scrub-owed"] { unlink(path + suffix) }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Nearest-rank percentile of `values` (0...100).
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

func format(_ value: Double, decimals: Int = 0) -> String {
    String(format: "%.\(decimals)f", value)
}

func makeRecord(_ index: Int, users: Int = 50) -> Record {
    Record.event(
        "song_liked", user: .externalID("user-\(index % users)"),
        properties: ["song": .string("song-\(index)"), "position": .number(JSONNumber(index))])
}

/// The payload the library would store for `makeRecord(index)` (with `time` filled in).
func makePayload(_ index: Int, time: String, users: Int = 50) -> String {
    var object = makeRecord(index, users: users).object
    object["time"] = .string(time)
    return object.serialized
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Peak resident set size of this process so far (VmHWM), in bytes.
func peakRSSBytes() -> Int64 {
    statusField("VmHWM")
}

/// Current resident set size of this process (VmRSS), in bytes.
func currentRSSBytes() -> Int64 {
    statusField("VmRSS")
}

private func statusField(_ name: String) -> Int64 {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
        let digits = line.dropFirst(name.count + 1).filter(\.isNumber)
        return (Int64(String(digits)) ?? 0) * 1024
    }
    return 0
}

/// What a finished child process reported.
struct ChildResult {
    var status: Int32
    var wallSeconds: Double
    /// Peak RSS of the child (ru_maxrss), bytes.
    var peakRSSBytes: Int64
    var output: String
    /// CPU time of the child, user + system (the operating system's accounting, which load barely moves).
    var cpuSeconds: Double = 0
}

/// Spawns `path` with `arguments`, waits, and returns its exit status, wall time, peak RSS and stdout.
func runChild(_ path: String, _ arguments: [String], captureOutput: Bool = true, environment: [String: String] = [:])
    throws -> ChildResult
{
    let handle = try spawnChild(path, arguments, captureOutput: captureOutput, environment: environment)
    return handle.wait()
}

/// A started child process.
final class ChildHandle: Sendable {
    let pid: pid_t
    let started: UInt64
    let outputFD: Int32

    init(pid: pid_t, started: UInt64, outputFD: Int32) {
        self.pid = pid
        self.started = started
        self.outputFD = outputFD
    }

    func wait() -> ChildResult {
        var output: [UInt8] = []
        if outputFD >= 0 {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(outputFD, &chunk, chunk.count)
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                output.append(contentsOf: chunk[..<count])
            }
            close(outputFD)
        }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
        let elapsed = seconds(since: started)
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ChildResult(
            status: exitStatus, wallSeconds: elapsed, peakRSSBytes: Int64(usage.ru_maxrss) * 1024,
            output: String(decoding: output, as: UTF8.self),
            cpuSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6)
    }
}

func spawnChild(_ path: String, _ arguments: [String], captureOutput: Bool = true, environment: [String: String] = [:])
    throws -> ChildHandle
{
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    var pipeFDs: [Int32] = [-1, -1]
    if captureOutput {
        guard pipe(&pipeFDs) == 0 else { throw BenchError("pipe failed") }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], STDOUT_FILENO)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        posix_spawn_file_actions_addclose(&actions, pipeFDs[1])
    } else {
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
    }
    var env = ProcessInfo.processInfo.environment
    for (key, value) in environment { env[key] = value }
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let started = now()
    let rc = posix_spawn(&pid, path, &actions, nil, argv, envp)
    if captureOutput { close(pipeFDs[1]) }
    guard rc == 0 else {
        if captureOutput { close(pipeFDs[0]) }
        throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))")
    }
    return ChildHandle(pid: pid, started: started, outputFD: captureOutput ? pipeFDs[0] : -1)
}

/// Opens a raw C-API connection with the library's pragmas (the floor every ratio is measured against).
func openRaw(_ path: String, durability: QueueOptions.Durability) throws -> OpaquePointer {
    var handle: OpaquePointer?
    guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
        let db = handle
    else { throw BenchError("cannot open \(path)") }
    sqlite3_busy_timeout(db, 5000)
    try rawExec(db, "PRAGMA journal_mode = WAL")
    try rawExec(db, "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
    try rawExec(db, "PRAGMA journal_size_limit = \(32 * 1024 * 1024)")
    try rawExec(db, "PRAGMA temp_store = MEMORY")
    return db
}

func rawExec(_ db: OpaquePointer, _ sql: String) throws {
    guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
        throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
    }
}

func rawPrepare(_ db: OpaquePointer, _ sql: String) throws -> OpaquePointer {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
        throw BenchError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
    }
    return statement
}

/// Fills a fresh queue file with `count` pending records quickly (synchronous OFF, 10,000 per transaction), with
/// the same payloads the library would write, spread over `users` users. Used to build backlogs; not a measured path.
func fillQueue(path: String, count: Int, startIndex: Int = 0, users: Int = 50) throws {
    try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0)).close()
    var handle: OpaquePointer?
    guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
        let db = handle
    else { throw BenchError("cannot open \(path)") }
    defer { sqlite3_close_v2(db) }
    try rawExec(db, "PRAGMA journal_mode = WAL")
    try rawExec(db, "PRAGMA synchronous = OFF")
    try rawExec(db, "PRAGMA cache_size = -65536")
    let insert = try rawPrepare(db, "INSERT INTO records (kind, payload, created_at_ms) VALUES ('event', ?1, ?2)")
    defer { sqlite3_finalize(insert) }
    let nowMs = WallClock.nowMilliseconds()
    let time = ISO8601.format(unixMilliseconds: nowMs)
    let transient = eventqueue_sqlite_transient()
    var index = 0
    while index < count {
        try rawExec(db, "BEGIN IMMEDIATE")
        let end = min(count, index + 10_000)
        while index < end {
            let payload = makePayload(startIndex + index, time: time, users: users)
            sqlite3_bind_text(insert, 1, payload, -1, transient)
            sqlite3_bind_int64(insert, 2, nowMs)
            guard sqlite3_step(insert) == SQLITE_DONE else {
                throw BenchError("fill: \(String(cString: sqlite3_errmsg(db)))")
            }
            sqlite3_reset(insert)
            index += 1
        }
        try rawExec(db, "COMMIT")
    }
    try rawExec(db, "PRAGMA wal_checkpoint(TRUNCATE)")
}

/// Copies a closed queue file (no `-wal`) to `destination`.
func copyQueue(_ source: String, to destination: String) throws {
    removeDatabase(destination)
    let result = try runChild("/bin/cp", [source, destination], captureOutput: false)
    guard result.status == 0 else { throw BenchError("cp \(source) \(destination) failed") }
}

/// Collects results as JSON-compatible dictionaries.
final class Results: @unchecked Sendable {
    var scenarios: [String: Any] = [:]

    func write(to path: String, settings: Settings) throws {
        var uts = utsname()
        uname(&uts)
        let machine = withUnsafeBytes(of: &uts.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let release = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let document: [String: Any] = [
            "quick": settings.quick,
            "rounds": settings.rounds,
            "sqlite": String(cString: sqlite3_libversion()),
            "cpus": sysconf(Int32(_SC_NPROCESSORS_ONLN)),
            "machine": machine,
            "kernel": release,
            "finished_at": ISO8601.format(unixMilliseconds: WallClock.nowMilliseconds()),
            "scenarios": scenarios,
        ]
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: path))
    }
}

func log(_ line: String) {
    print(line)
    fflush(nil)
}

extension Settings {
    /// This executable's path (child modes re-run it).
    static func ownPath() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
