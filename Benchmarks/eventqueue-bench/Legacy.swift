// Scenario 7: the legacy recipe. The pending records live in one shared file (a JSON array standing in for the
// shared defaults store): each append reads the whole array, appends, and writes it back (atomically, by rename,
// as the defaults store does), with no lock between processes; a launch reads the array, "sends" every entry
// and writes back an empty array. Measured: the per-append cost as the pending count grows (O(n)), and the
// fraction of records lost with 1, 2, 4 and 8 concurrent writer processes and launches during the run.
// EventQueue runs the same workload: QueueWriter appends, the Drainer delivers at each launch.
import Dispatch
import EventQueue
import EventQueueDelivery
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One append of the legacy recipe: read the whole file, parse, append, serialize, write back by rename.
func legacyAppend(file: URL, entry: [String: Any]) throws {
    var array: [Any] = []
    if let data = try? Data(contentsOf: file), !data.isEmpty,
        let parsed = try? JSONSerialization.jsonObject(with: data) as? [Any]
    {
        array = parsed
    }
    array.append(entry)
    let data = try JSONSerialization.data(withJSONObject: array)
    try data.write(to: file, options: .atomic)
}

/// A launch of the legacy recipe: read the array, deliver every entry, remove them (write an empty array).
func legacyLaunch(file: URL) -> [String] {
    guard let data = try? Data(contentsOf: file), !data.isEmpty,
        let array = try? JSONSerialization.jsonObject(with: data) as? [[String: Any]]
    else { return [] }
    try? Data("[]".utf8).write(to: file, options: .atomic)
    return array.compactMap { $0["seq"] as? String }
}

func legacyEntry(_ seq: String, index: Int) -> [String: Any] {
    [
        "seq": seq, "name": "song_liked", "external_id": "user-\(index % 50)",
        "time": "2026-11-23T00:00:00.000Z", "properties": ["song": "song-\(index)", "position": index],
    ]
}

/// `child-legacy-writer FILE WRITER COUNT` and `child-eq-writer DB WRITER COUNT`.
func runLegacyWriterChild(_ arguments: [String], eventQueue: Bool) -> Never {
    guard arguments.count >= 3, let count = Int(arguments[2]) else { exit(64) }
    let writerID = arguments[1]
    do {
        if eventQueue {
            let writer = try QueueWriter(path: arguments[0], options: QueueOptions(minimumFreeBytes: 0))
            for index in 0..<count {
                try writer.enqueue(
                    Record.event(
                        "song_liked", user: .externalID("user-\(index % 50)"),
                        properties: ["seq": .string("w\(writerID)-\(index)"), "position": .number(JSONNumber(index))]))
            }
            writer.close()
        } else {
            let file = URL(fileURLWithPath: arguments[0])
            for index in 0..<count {
                try legacyAppend(file: file, entry: legacyEntry("w\(writerID)-\(index)", index: index))
            }
        }
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("writer failed: \(error)\n".utf8))
        exit(1)
    }
}

/// Collects the `seq` property of every delivered record.
final class CollectingSink: Sink {
    let seen = Mutex<[String]>([])
    var name: String { "collect" }

    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        let seqs = batch.compactMap { record -> String? in
            if case .object(let properties)? = record.object["properties"], case .string(let seq)? = properties["seq"] {
                return seq
            }
            return nil
        }
        seen.withLock { $0.append(contentsOf: seqs) }
        return DeliveryReport(.delivered, for: batch)
    }
}

func runLegacyScenario(_ settings: Settings, _ results: Results) async throws {
    let appends = settings.quick ? 2_000 : 3_000
    let step = appends / 10
    log("== 7. legacy recipe (read-append-write one JSON file) vs EventQueue")
    // Part A: cost per append as the pending count grows, one process, no drain.
    let file = URL(fileURLWithPath: "\(settings.directory)/eventqueue-bench-\(getpid())-legacy.json")
    defer { try? FileManager.default.removeItem(at: file) }
    try? FileManager.default.removeItem(at: file)
    var legacyCosts: [Double] = []
    for index in 0..<appends {
        let start = now()
        try legacyAppend(file: file, entry: legacyEntry("a-\(index)", index: index))
        legacyCosts.append(Double(now() - start) / 1000)
    }
    var eqCosts: [QueueOptions.Durability: [Double]] = [:]
    for durability in [QueueOptions.Durability.full, .normal] {
        let path = freshPath(settings, "legacy-eq-\(durability.rawValue)")
        defer { removeDatabase(path) }
        let writer = try QueueWriter(path: path, options: QueueOptions(durability: durability, minimumFreeBytes: 0))
        for index in 0..<appends {
            let start = now()
            try writer.enqueue(makeRecord(index))
            eqCosts[durability, default: []].append(Double(now() - start) / 1000)
        }
        writer.close()
    }
    var growth: [[String: Any]] = []
    log(pad("pending", 10) + pad("legacy us/append", 18) + pad("EventQueue FULL us", 20) + "EventQueue NORMAL us")
    for point in stride(from: 0, to: appends, by: step) {
        let window = point..<min(appends, point + step)
        let legacy = median(Array(legacyCosts[window]))
        let full = median(Array(eqCosts[.full]?[window] ?? []))
        let normal = median(Array(eqCosts[.normal]?[window] ?? []))
        log(pad(String(point), 10) + pad(format(legacy), 18) + pad(format(full), 20) + format(normal))
        growth.append([
            "pending": point, "legacy_us": legacy, "eventqueue_full_us": full, "eventqueue_normal_us": normal,
        ])
    }

    // Part B: concurrent writer processes and launches every 250 ms; count what arrives.
    let perWriter = settings.quick ? 200 : 500
    var loss: [[String: Any]] = []
    log(
        pad("writers", 9) + pad("written", 9) + pad("legacy lost", 13) + pad("legacy dup", 12) + pad("EQ lost", 9)
            + "EQ dup")
    for writers in [1, 2, 4, 8] {
        let written = writers * perWriter
        // Legacy.
        try? FileManager.default.removeItem(at: file)
        let legacyHandles = try (0..<writers).map {
            try spawnChild(Settings.ownPath(), ["child-legacy-writer", file.path, String($0), String(perWriter)])
        }
        let finished = Mutex(0)
        for handle in legacyHandles {
            DispatchQueue.global().async {
                _ = handle.wait()
                finished.withLock { $0 += 1 }
            }
        }
        var delivered: [String] = []
        while finished.withLock({ $0 }) < writers {
            try await Task.sleep(for: .milliseconds(250))
            delivered += legacyLaunch(file: file)
        }
        delivered += legacyLaunch(file: file)
        let legacyLost = written - Set(delivered).count
        let legacyDup = delivered.count - Set(delivered).count
        // EventQueue.
        let path = freshPath(settings, "legacy-eq-concurrent")
        defer { removeDatabase(path) }
        try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0)).close()
        let store = try QueueStore(path: path)
        let sink = CollectingSink()
        let drainer = Drainer(store: store, sink: sink, logger: quietLogger)
        let eqHandles = try (0..<writers).map {
            try spawnChild(Settings.ownPath(), ["child-eq-writer", path, String($0), String(perWriter)])
        }
        let eqFinished = Mutex(0)
        let failures = Mutex(0)
        for handle in eqHandles {
            DispatchQueue.global().async {
                let result = handle.wait()
                failures.withLock { $0 += result.status == 0 ? 0 : 1 }
                eqFinished.withLock { $0 += 1 }
            }
        }
        while eqFinished.withLock({ $0 }) < writers {
            try await Task.sleep(for: .milliseconds(250))
            _ = try await drainer.drain()
        }
        _ = try await drainer.drain()
        await store.close()
        let seen = sink.seen.withLock { $0 }
        let eqLost = written - Set(seen).count
        let eqDup = seen.count - Set(seen).count
        log(
            pad(String(writers), 9) + pad(String(written), 9)
                + pad("\(legacyLost) (\(format(Double(legacyLost) / Double(written) * 100, decimals: 1))%)", 13)
                + pad(String(legacyDup), 12) + pad(String(eqLost), 9) + String(eqDup))
        loss.append([
            "writers": writers, "written": written, "legacy_lost": legacyLost,
            "legacy_lost_fraction": Double(legacyLost) / Double(written), "legacy_duplicates": legacyDup,
            "eventqueue_lost": eqLost, "eventqueue_duplicates": eqDup,
            "eventqueue_writer_failures": failures.withLock { $0 },
        ])
    }
    results.scenarios["legacy"] = ["growth": growth, "loss": loss, "appends": appends, "per_writer": perWriter]
}
