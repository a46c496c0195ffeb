import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The ways a queue file gets damaged in the corruption tests, shared by the `queuectl` and `queued` suites.
public enum QueueDamage: String, CaseIterable, Sendable {
    /// A few hundred bytes overwritten in the middle of one leaf page of the records table (not its header).
    case dataPage
    /// The file cut to about half its length, as a full disk or a bad copy leaves it.
    case truncated
    /// Not an SQLite file at all.
    case foreign
}

/// What a damage did, so a test can compute what must survive it.
public struct DamageFacts: Sendable {
    /// Records the file held before the damage (all pending).
    public var records: Int
    /// Records that sat on pages the damage reached (0 for a foreign file: nothing can be read).
    public var recordsOnDamagedPages: Int
    /// The damaged page (dataPage), or the first missing page (truncated).
    public var page: Int?
}

/// Runs one SQL script with the sqlite3 shell and returns its output lines.
public func sqlite3(_ db: String, _ sql: String, in scratch: Scratch) async throws -> [String] {
    let result = try await run("/usr/bin/sqlite3", [db, sql], in: scratch)
    guard result.status == 0 else {
        throw ScratchError(message: "sqlite3 \(sql) failed (\(result.status)): \(result.stderr)")
    }
    return result.stdout.split(separator: "\n").map(String.init)
}

/// NDJSON lines of `count` valid events, each name carrying its number (`rec-<i>`) so a test can tell them apart.
public func numberedEvents(_ count: Int, prefix: String = "rec") -> String {
    (0..<count).map { index in
        #"{"type":"event","external_id":"user-\#(index % 17)","name":"\#(prefix)-\#(index)","#
            + #""time":"2026-01-02T03:04:05Z","properties":{"pad":"\#(String(repeating: "p", count: 120))"}}"#
    }.joined(separator: "\n") + "\n"
}

/// Creates a queue of `count` pending events with `queuectl enqueue --ndjson`, closed cleanly (no `-wal`).
public func makeQueue(_ db: String, records count: Int, in scratch: Scratch) async throws {
    let result = try await queuectl(["enqueue", "--ndjson", "-"], db: db, stdin: numberedEvents(count), in: scratch)
    guard result.status == 0 else { throw ScratchError(message: "seeding the queue failed: \(result.stderr)") }
}

/// Damages a queue made by `makeQueue` (or replaces it by a foreign file) and says what the damage reached.
public func damage(_ db: String, _ kind: QueueDamage, records: Int, in scratch: Scratch) async throws -> DamageFacts {
    switch kind {
    case .foreign:
        try Data(String(repeating: "this is not a queue\n", count: 5000).utf8).write(to: URL(fileURLWithPath: db))
        return DamageFacts(records: records, recordsOnDamagedPages: records, page: nil)
    case .dataPage:
        let pageSize = Int(try await sqlite3(db, "PRAGMA page_size", in: scratch).first ?? "") ?? 4096
        let leaves = try await sqlite3(
            db, "SELECT pageno, ncell FROM dbstat WHERE name = 'records' AND pagetype = 'leaf' ORDER BY pageno",
            in: scratch)
        let pages = leaves.compactMap { line -> (Int, Int)? in
            let parts = line.split(separator: "|").compactMap { Int($0) }
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }
        guard pages.count >= 3 else { throw ScratchError(message: "too few leaf pages: \(leaves)") }
        let (page, cells) = pages[pages.count / 2]
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: db))
        try handle.seek(toOffset: UInt64((page - 1) * pageSize + pageSize / 2 - 150))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 300))
        try handle.close()
        return DamageFacts(records: records, recordsOnDamagedPages: cells, page: page)
    case .truncated:
        let pageSize = Int(try await sqlite3(db, "PRAGMA page_size", in: scratch).first ?? "") ?? 4096
        let pageCount = Int(try await sqlite3(db, "PRAGMA page_count", in: scratch).first ?? "") ?? 0
        let keep = pageCount / 2
        let lost = try await sqlite3(
            db,
            "SELECT coalesce(sum(ncell), 0) FROM dbstat WHERE name = 'records' AND pagetype = 'leaf' AND pageno > \(keep)",
            in: scratch)
        guard truncate(db, off_t(keep * pageSize)) == 0 else {
            throw ScratchError(message: "truncate failed: \(String(cString: strerror(errno)))")
        }
        return DamageFacts(records: records, recordsOnDamagedPages: Int(lost.first ?? "") ?? -1, page: keep + 1)
    }
}

/// The bytes of a file and which of its `-wal`/`-shm` companions exist, to prove nothing touched it.
public struct FileFingerprint: Equatable, Sendable {
    public var bytes: Data
    public var companions: [String]

    public init(_ path: String) throws {
        bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        companions = ["-wal", "-shm", "-journal"].filter { access(path + $0, F_OK) == 0 }
    }
}
