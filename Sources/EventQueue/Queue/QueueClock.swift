#if canImport(Glibc)
    import Glibc
#endif

/// A reading of the host's monotonic clock that keeps counting through a suspend (`CLOCK_BOOTTIME`), with the boot
/// it counts from: readings of one boot can be subtracted, readings of two boots cannot.
public struct BootClockReading: Sendable, Hashable {
    /// The kernel's id of the boot (`/proc/sys/kernel/random/boot_id`).
    public var bootID: String
    /// Milliseconds since that boot, suspend included.
    public var milliseconds: Int64

    /// A reading as given (tests, and clocks that simulate time).
    public init(bootID: String, milliseconds: Int64) {
        self.bootID = bootID
        self.milliseconds = milliseconds
    }

    /// The system's reading. Without a readable boot id (no /proc), every boot looks like one whose clock went
    /// back: the queue clock then stands still until it passes its last reading, which keeps records longer and
    /// never expires one early.
    public static func system() -> BootClockReading {
        var spec = timespec()
        clock_gettime(CLOCK_BOOTTIME, &spec)
        return BootClockReading(
            bootID: currentBootID, milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
    }

    /// Read once: it cannot change while the process runs.
    private static let currentBootID: String = {
        guard let file = fopen("/proc/sys/kernel/random/boot_id", "r") else { return "unknown" }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "unknown" }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let id = text.filter { !$0.isWhitespace }
        return id.isEmpty ? "unknown" : id
    }()
}

/// The queue clock (Migrations/0008): the time the queue has existed, by which the max age is measured so that no
/// clock can make a record older than it is. Within a boot it advances by the monotonic clock alone; between boots
/// the wall clock's difference is added (never less than 0), from a wall time kept never earlier than the last one
/// plus the monotonic time since, so a step back before a reboot cannot count the same time twice.
struct QueueClock: Hashable {
    var elapsed: Int64
    var bootID: String
    var bootMilliseconds: Int64
    var wallMilliseconds: Int64

    /// Where the clock stands at `boot` and `wall`: a reading earlier than the stored one adds nothing; saturated.
    func advanced(to boot: BootClockReading, wall: Int64) -> QueueClock {
        if boot.bootID == bootID {
            let delta = max(0, Self.difference(boot.milliseconds, bootMilliseconds))
            return QueueClock(
                elapsed: Self.sum(elapsed, delta), bootID: bootID,
                bootMilliseconds: max(bootMilliseconds, boot.milliseconds),
                wallMilliseconds: max(wall, Self.sum(wallMilliseconds, delta)))
        }
        return QueueClock(
            elapsed: Self.sum(elapsed, max(0, Self.difference(wall, wallMilliseconds))), bootID: boot.bootID,
            bootMilliseconds: boot.milliseconds, wallMilliseconds: wall)
    }

    private static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (value, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b < 0 ? Int64.min : Int64.max) : value
    }

    static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (value, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? Int64.max : Int64.min) : value
    }

    static func read(_ connection: Connection) throws(QueueError) -> QueueClock? {
        try connection.firstRow(QueueClockSQL.read, operation: "reading the queue clock") {
            QueueClock(
                elapsed: max(0, $0.int64(0)), bootID: $0.text(1) ?? "", bootMilliseconds: $0.int64(2),
                wallMilliseconds: $0.int64(3))
        }
    }

    func write(_ connection: Connection) throws(QueueError) {
        try connection.run(
            QueueClockSQL.write, operation: "advancing the queue clock", elapsed, bootID, bootMilliseconds,
            wallMilliseconds)
    }

    /// The highest record id ever assigned (0 before the first), and the newest checkpoint's id and time.
    static func ids(_ connection: Connection) throws(QueueError) -> (
        assigned: Int64, checkpointed: Int64, checkpointedAt: Int64?
    ) {
        try connection.firstRow(QueueClockSQL.ids, operation: "reading the queue clock") {
            ($0.int64(0), $0.int64(1), $0.optionalInt64(2))
        } ?? (0, 0, nil)
    }

    /// The least queue time between two checkpoints: a minute, or a 1440th of `maxAge` when longer, so the table
    /// holds about 1,440 rows at most, and an age is late by at most that plus a minute.
    static func spacing(maxAge: Int64) -> Int64 { max(60_000, maxAge / 1440) }

    /// The newest checkpoint at or before queue time `time`: every record up to its id is `now - elapsed` old.
    static func checkpoint(atOrBefore time: Int64, _ connection: Connection) throws(QueueError) -> (
        elapsed: Int64, maxID: Int64
    )? {
        try connection.firstRow(QueueClockSQL.cutoff, operation: "reading the queue clock", time) {
            ($0.int64(0), $0.int64(1))
        }
    }
}

extension QueueClock {
    /// The clock of a new file: 0 now (in an extension, so that the memberwise initializer stays).
    init(at boot: BootClockReading, wall: Int64) {
        self.init(elapsed: 0, bootID: boot.bootID, bootMilliseconds: boot.milliseconds, wallMilliseconds: wall)
    }
}

enum QueueClockSQL {
    static let read = "SELECT elapsed_ms, boot_id, boot_ms, wall_ms FROM queue_clock WHERE id = 1"

    static let write = """
        INSERT INTO queue_clock (id, elapsed_ms, boot_id, boot_ms, wall_ms) VALUES (1, ?1, ?2, ?3, ?4)
        ON CONFLICT (id) DO UPDATE SET elapsed_ms = excluded.elapsed_ms, boot_id = excluded.boot_id,
            boot_ms = excluded.boot_ms, wall_ms = excluded.wall_ms
        """

    /// The id counter, and the newest checkpoint (one lookup each).
    static let ids = """
        SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'records'), 0),
            coalesce((SELECT max_id FROM queue_clock_checkpoints ORDER BY elapsed_ms DESC LIMIT 1), 0),
            (SELECT max(elapsed_ms) FROM queue_clock_checkpoints)
        """

    /// A later reading at the same millisecond only raises the id: it was still true then.
    static let checkpoint = """
        INSERT INTO queue_clock_checkpoints (elapsed_ms, max_id) VALUES (?1, ?2)
        ON CONFLICT (elapsed_ms) DO UPDATE SET max_id = max(max_id, excluded.max_id)
        """

    static let cutoff = """
        SELECT elapsed_ms, max_id FROM queue_clock_checkpoints WHERE elapsed_ms <= ?1
        ORDER BY elapsed_ms DESC LIMIT 1
        """

    /// Checkpoints older than the cutoff's can no longer be one: a later cutoff is never earlier.
    static let prune = "DELETE FROM queue_clock_checkpoints WHERE elapsed_ms < ?1"

    static let stale = "SELECT count(*) FROM queue_clock_checkpoints WHERE elapsed_ms < ?1"
}
