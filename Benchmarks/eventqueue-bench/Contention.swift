// Scenario 5: contention. 1, 2, 4 and 8 writer processes enqueue (one record per transaction, FULL, the
// defaults) for a fixed time while the Drainer drains to the null sink in this process, pass after pass, as
// the daemon does. Reports total enqueue throughput, enqueue latency percentiles (HdrHistogram, microsecond
// resolution, merged across writers), SQLITE_BUSY errors surfaced to writers, and that every record arrived.
// Each enqueue slower than 2 ms is given a cause: mostly waiting for a CPU (the writer's run delay from
// /proc/self/schedstat), during the drainer's maintenance (vacuum and checkpoint, run here after each pass), or
// otherwise (waiting for the write lock). Knobs for finding the cause (docs/PERFORMANCE.md section 5):
// EVENTQUEUE_BENCH_NO_MAINTENANCE=1, EVENTQUEUE_BENCH_NO_DRAINER=1, EVENTQUEUE_BENCH_WRITER_DURABILITY=normal.
import Dispatch
import EventQueue
import EventQueueDelivery
import Foundation
import Histogram
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `child-writer DB SECONDS`: enqueues until SECONDS pass. Prints `count busy errors` and then, per enqueue, its
/// latency and its start on the system-wide monotonic clock (both in us), so the parent can tell which slow
/// enqueues overlapped its own maintenance.
func runWriterChild(_ arguments: [String]) -> Never {
    guard arguments.count >= 2, let duration = Double(arguments[1]) else {
        print("usage: child-writer DB SECONDS")
        exit(64)
    }
    var latencies: [UInt32] = []
    latencies.reserveCapacity(100_000)
    var starts: [UInt64] = []
    starts.reserveCapacity(100_000)
    // Time spent runnable but waiting for a CPU during each enqueue (/proc/self/schedstat's run delay), so a slow
    // enqueue can be told apart: waiting for the lock, or for the scheduler.
    var cpuWaits: [UInt32] = []
    cpuWaits.reserveCapacity(100_000)
    let schedstat = open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC)
    var count = 0
    var busy = 0
    var errors = 0
    do {
        let writer = try QueueWriter(
            path: arguments[0],
            options: QueueOptions(
                durability: writerDurability, minimumFreeBytes: 0,
                waitsInLine: ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_NO_LINE"] == nil))
        let deadline = now() + UInt64(duration * 1e9)
        var index = Int(getpid()) * 1_000_000
        while now() < deadline {
            let waitedBefore = runDelay(schedstat)
            let start = now()
            do {
                try writer.enqueue(makeRecord(index))
                count += 1
                latencies.append(UInt32(clamping: (now() - start) / 1000))
                starts.append(start / 1000)
                cpuWaits.append(UInt32(clamping: (runDelay(schedstat) &- waitedBefore) / 1000))
            } catch .busy {
                busy += 1
            } catch {
                errors += 1
            }
            index += 1
        }
        writer.close()
    } catch {
        errors += 1
    }
    var text = "\(count) \(busy) \(errors)\n"
    text.reserveCapacity(latencies.count * 20)
    for index in latencies.indices {
        text += String(latencies[index])
        text += " "
        text += String(starts[index])
        text += " "
        text += String(cpuWaits[index])
        text += "\n"
    }
    print(text, terminator: "")
    fflush(nil)
    exit(0)
}

/// The writers' durability: FULL (the default), or NORMAL with EVENTQUEUE_BENCH_WRITER_DURABILITY=normal, to see
/// how much of the tail is the commit's fsync.
let writerDurability: QueueOptions.Durability =
    ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_WRITER_DURABILITY"] == "normal" ? .normal : .full

/// This thread's run delay so far (ns): time runnable but not running (the second field of /proc/self/schedstat).
func runDelay(_ fd: Int32) -> UInt64 {
    guard fd >= 0 else { return 0 }
    var buffer = [UInt8](repeating: 0, count: 96)
    let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 96, 0) }
    guard count > 0 else { return 0 }
    let fields = buffer[0..<count].split(separator: UInt8(ascii: " "))
    guard fields.count > 1 else { return 0 }
    return UInt64(String(decoding: fields[1], as: UTF8.self)) ?? 0
}

func runContentionScenario(_ settings: Settings, _ results: Results) async throws {
    let duration = settings.quick ? 4.0 : 15.0
    log("== 5. contention: N writer processes for \(Int(duration)) s each while the Drainer drains (null sink)")
    log(
        pad("writers", 9) + pad("enqueued/s", 12) + pad("p50 us", 9) + pad("p99 us", 9) + pad("p99.9 us", 10)
            + pad("busy", 6) + pad("lost", 6) + pad("drainer busy", 13) + "slow enqueues, by cause")
    var rows: [[String: Any]] = []
    // EVENTQUEUE_BENCH_WRITERS="8" (or "1,8"): only these writer counts.
    let counts =
        ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_WRITERS"].map {
            $0.split(separator: ",").compactMap { Int($0) }
        } ?? [1, 2, 4, 8]
    for writers in counts {
        let path = freshPath(settings, "contention-\(writers)")
        defer { removeDatabase(path) }
        try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0)).close()
        let store = try QueueStore(path: path)
        // Counts in the sink, so records delivered by a pass that later failed (busy) are counted too.
        let sink = CountingSink()
        // Maintenance runs here, after each pass as the daemon's would, so that its intervals are known: a slow
        // enqueue that overlaps one is attributed to it (the "cause" columns).
        let drainer = Drainer(
            store: store, sink: sink, options: DrainOptions(maintenanceAfterPass: false), logger: quietLogger)
        let maintain = ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_NO_MAINTENANCE"] == nil
        let drain = ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_NO_DRAINER"] == nil
        var maintenance: [(start: UInt64, end: UInt64)] = []
        // Tagged: true for a Python writer (EVENTQUEUE_BENCH_PYTHON_WRITERS), whose tails are reported apart.
        let outputs = Mutex<[(python: Bool, result: ChildResult)]>([])
        var handles = try (0..<writers).map { _ in
            (false, try spawnChild(Settings.ownPath(), ["child-writer", path, String(duration)]))
        }
        for _ in 0..<pythonWriters {
            handles.append((true, try spawnChild("/usr/bin/python3", [pythonWriterScript, path, String(duration)])))
        }
        let started = now()
        for (python, handle) in handles {
            DispatchQueue.global().async {
                let result = handle.wait()
                outputs.withLock { $0.append((python, result)) }
            }
        }
        var delivered = 0
        var passes = 0
        var drainerBusy = 0
        while outputs.withLock({ $0.count }) < handles.count {
            // The daemon treats a busy queue as a failed pass and tries again at the next launch; so does this
            // loop, and counts it (the writers' own errors are counted separately, in the children).
            if !drain {
                try await Task.sleep(for: .milliseconds(50))
                continue
            }
            do {
                let turns = try await store.withConsumer { consumer throws(QueueError) in consumer.admin.writerTurns }
                let summary = try await drainer.drain()
                delivered += summary.delivered
                passes += 1
                if maintain {
                    // As the daemon's drain loop does after a pass (`Drainer`): it waits while writers write.
                    var start = now() / 1000
                    var ran = try await store.withConsumer { consumer throws(QueueError) in
                        try consumer.admin.maintainAfterPass(turnsAtPassStart: turns) != nil
                    }
                    if !ran {
                        try await Task.sleep(for: .nanoseconds(QueueAdmin.upkeepRetryNanoseconds))
                        start = now() / 1000
                        ran = try await store.withConsumer { consumer throws(QueueError) in
                            try consumer.admin.maintainAfterPass(turnsAtPassStart: nil) != nil
                        }
                    }
                    if ran { maintenance.append((start, now() / 1000)) }
                }
                if summary.delivered == 0 { try await Task.sleep(for: .milliseconds(20)) }
            } catch let error as QueueError {
                guard case .busy = error else { throw error }
                drainerBusy += 1
            }
        }
        let elapsed = seconds(since: started)
        delivered += try await drainer.drain().delivered
        let remaining = try await store.stats()
        await store.close()
        let intervals = maintenance.sorted { $0.start < $1.start }
        func overlapsMaintenance(_ start: UInt64, _ latency: UInt64) -> Bool {
            // The last interval starting before the enqueue ended.
            var low = 0
            var high = intervals.count
            while low < high {
                let middle = (low + high) / 2
                if intervals[middle].start <= start + latency { low = middle + 1 } else { high = middle }
            }
            return low > 0 && intervals[low - 1].end >= start
        }
        var swift = WriterSide()
        var python = WriterSide()
        for (isPython, result) in outputs.withLock({ $0 }) {
            if isPython {
                python.add(result.output, overlapsMaintenance: overlapsMaintenance)
            } else {
                swift.add(result.output, overlapsMaintenance: overlapsMaintenance)
            }
        }
        let (histogram, enqueued, busy, errors) = (swift.histogram, swift.enqueued, swift.busy, swift.errors)
        let (slowWaitingForCPU, slowDuringMaintenance, slowOtherwise) =
            (swift.slowWaitingForCPU, swift.slowDuringMaintenance, swift.slowOtherwise)
        // Records still leased (by a pass that failed) are claimable again once their lease expires.
        delivered = sink.count.withLock { $0 }
        let lost = enqueued + python.enqueued - delivered - remaining.pending - remaining.leased
        let p50 = Double(histogram.valueAtPercentile(50))
        let p99 = Double(histogram.valueAtPercentile(99))
        let p999 = Double(histogram.valueAtPercentile(99.9))
        let rate = swift.rate ?? Double(enqueued) / elapsed
        log(
            pad(String(writers), 9) + pad(format(rate), 12) + pad(format(p50), 9) + pad(format(p99), 9)
                + pad(format(p999), 10) + pad(String(busy), 6) + pad(String(lost), 6) + pad(String(drainerBusy), 13)
                + "slow (>2 ms): \(slowWaitingForCPU) mostly waiting for a CPU, \(slowDuringMaintenance) during "
                + "maintenance (\(maintenance.count) runs), \(slowOtherwise) otherwise; "
                + "\(sink.batches.withLock { $0 }) batches delivered")
        if pythonWriters > 0 { log(python.line(writers: pythonWriters)) }
        rows.append([
            "python_writers": pythonWriters, "python": python.json,
            "writers": writers, "enqueued": enqueued, "enqueued_per_s": rate, "p50_us": p50, "p99_us": p99,
            "p999_us": p999, "max_us": Double(histogram.max), "busy_errors": busy, "other_errors": errors,
            "delivered": delivered, "lost": lost, "drain_passes": passes, "seconds": elapsed,
            "drainer_busy_passes": drainerBusy, "slow_during_maintenance": slowDuringMaintenance,
            "slow_otherwise": slowOtherwise, "maintenance_runs": maintenance.count,
            "slow_waiting_for_cpu": slowWaitingForCPU,
        ])
    }
    results.scenarios["contention"] = rows
}

/// EVENTQUEUE_BENCH_PYTHON_WRITERS=N: N writers of docs/WRITERS.md's Python recipe run beside the Swift ones
/// (scripts/bench-support/contention_python_writer.py, or EVENTQUEUE_BENCH_PYTHON_WRITER), reported apart.
let pythonWriters = Int(ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_PYTHON_WRITERS"] ?? "") ?? 0
let pythonWriterScript =
    ProcessInfo.processInfo.environment["EVENTQUEUE_BENCH_PYTHON_WRITER"]
    ?? "scripts/bench-support/contention_python_writer.py"

/// One side of a run (the Swift writers, or the Python ones of a mixed run), from the children's output: a line
/// `count busy errors`, then per enqueue `latency start cpu_wait` (us; start on the shared monotonic clock).
struct WriterSide {
    var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
    var enqueued = 0
    var busy = 0
    var errors = 0
    // The writers' own window (first start to last end): the loop's elapsed time also covers a drain pass still
    // running when the writers stopped.
    var firstStart = UInt64.max
    var lastEnd: UInt64 = 0
    // Enqueues slower than 2 ms, by cause: mostly waiting for a CPU (the scheduler's, not a lock's), overlapping
    // the drainer's maintenance (vacuum and checkpoint), or otherwise (waiting for the write lock).
    var slowWaitingForCPU = 0
    var slowDuringMaintenance = 0
    var slowOtherwise = 0

    mutating func add(_ output: String, overlapsMaintenance: (UInt64, UInt64) -> Bool) {
        var lines = output.split(separator: "\n")
        guard !lines.isEmpty else { return }
        let head = lines.removeFirst().split(separator: " ").compactMap { Int($0) }
        if head.count == 3 {
            enqueued += head[0]
            busy += head[1]
            errors += head[2]
        }
        for line in lines {
            let fields = line.split(separator: " ")
            guard let latency = fields.first.flatMap({ UInt64($0) }) else { continue }
            _ = histogram.record(latency)
            guard fields.count > 1, let start = UInt64(fields[1]) else { continue }
            firstStart = min(firstStart, start)
            lastEnd = max(lastEnd, start + latency)
            guard latency > 2_000, fields.count > 2, let cpuWait = UInt64(fields[2]) else { continue }
            if cpuWait * 2 >= latency {
                slowWaitingForCPU += 1
            } else if overlapsMaintenance(start, latency) {
                slowDuringMaintenance += 1
            } else {
                slowOtherwise += 1
            }
        }
    }

    /// Enqueues per second over the writers' own window; nil without one.
    var rate: Double? { lastEnd > firstStart ? Double(enqueued) / (Double(lastEnd - firstStart) / 1e6) : nil }

    func line(writers: Int) -> String {
        "  + \(writers) Python writers: \(format(rate ?? 0))/s, p50 \(histogram.valueAtPercentile(50)) us, p99 "
            + "\(histogram.valueAtPercentile(99)) us, p99.9 \(histogram.valueAtPercentile(99.9)) us, max "
            + "\(histogram.max) us, busy \(busy), errors \(errors)"
    }

    var json: [String: Any] {
        [
            "enqueued": enqueued, "enqueued_per_s": rate ?? 0, "p50_us": Double(histogram.valueAtPercentile(50)),
            "p99_us": Double(histogram.valueAtPercentile(99)), "p999_us": Double(histogram.valueAtPercentile(99.9)),
            "max_us": Double(histogram.max), "busy_errors": busy, "other_errors": errors,
        ]
    }
}

/// The null sink, counting what it was handed.
final class CountingSink: Sink {
    let count = Mutex(0)
    let batches = Mutex(0)
    var name: String { "count" }

    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        count.withLock { $0 += batch.count }
        batches.withLock { $0 += 1 }
        return DeliveryReport(.delivered, for: batch)
    }
}
