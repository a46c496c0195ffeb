/// The operator's limits on a queue file: how large it may grow, what a writer does when it is full, and how long
/// a pending record may wait. The daemon records them in the file (`queue_limits`), so that every writer enforces
/// the same limit at its next enqueue without a configuration of its own.
public struct QueueLimits: Sendable, Hashable {
    /// What a writer does with a record that would take the file past `maxQueueBytes`.
    public enum WhenFull: String, Sendable, Hashable, CaseIterable {
        /// Store nothing and fail with `QueueError.queueFull`: nothing accepted is ever given up.
        case refuse
        /// Delete the oldest dead letters, then pending records (never leased ones or erasures), until it fits.
        case dropOldest = "drop-oldest"
    }

    /// The most bytes of pages in use the file may hold (`SpaceKeeper`); 0: no limit but the free-space reserve.
    public var maxQueueBytes: Int64
    /// What a writer does with a record that does not fit under `maxQueueBytes`: refuse it, or drop the oldest.
    public var whenFull: WhenFull
    /// A pending record enqueued longer ago than this becomes an `expired` dead letter; 0 keeps records forever.
    public var maxAgeSeconds: Int64

    /// `queued`'s default max age: one week.
    public static let defaultMaxAgeSeconds: Int64 = 7 * 24 * 3600
    /// The smallest limit the daemon accepts (1 MiB): an empty queue file takes about 90 KB already.
    public static let smallestMaxQueueBytes: Int64 = 1 << 20

    /// Limits as the daemon records them; negative values are taken as 0 (no limit).
    public init(maxQueueBytes: Int64 = 0, whenFull: WhenFull = .refuse, maxAgeSeconds: Int64 = 0) {
        self.maxQueueBytes = max(0, maxQueueBytes)
        self.whenFull = whenFull
        self.maxAgeSeconds = max(0, maxAgeSeconds)
    }

    /// `queued`'s defaults: no size limit (refuse, should one be set), one week of age.
    public static let daemonDefault = QueueLimits(maxAgeSeconds: defaultMaxAgeSeconds)
}

/// Every record the queue gave up, by cause, since the file was created (`queue_drops`), by every process.
public struct QueueDrops: Sendable, Hashable {
    /// Deleted to make room for a newer record (`--when-full drop-oldest`).
    public var oldest: Int64
    /// Refused at enqueue for the size limit (`--when-full refuse`, or nothing left to drop).
    public var refused: Int64
    /// Dead-lettered for the age limit (`--max-age-seconds`).
    public var expired: Int64

    /// Counts by cause (all 0: nothing given up).
    public init(oldest: Int64 = 0, refused: Int64 = 0, expired: Int64 = 0) {
        self.oldest = oldest
        self.refused = refused
        self.expired = expired
    }

    /// What grew from `earlier` to this one, by cause (a total that went down, a hand-edited file, counts 0).
    public func grown(since earlier: QueueDrops) -> QueueDrops {
        QueueDrops(
            oldest: max(0, oldest - earlier.oldest), refused: max(0, refused - earlier.refused),
            expired: max(0, expired - earlier.expired))
    }

    /// Whether nothing was given up.
    @available(*, deprecated, message: "compare with QueueDrops(); kept for 1.3.0's callers, goes in 2.0")
    public var isZero: Bool { self == QueueDrops() }
}

enum QueueLimitsSQL {
    /// The writer's one read per transaction: the size limit and the policy.
    static let readSizeLimit = "SELECT max_queue_bytes, when_full FROM queue_limits WHERE id = 1"

    static let read = """
        SELECT max_queue_bytes, when_full, max_age_seconds, set_at_ms FROM queue_limits WHERE id = 1
        """

    /// The daemon at start: the limits it was given, replacing what an earlier start recorded.
    static let record = """
        INSERT INTO queue_limits (id, max_queue_bytes, when_full, max_age_seconds, set_at_ms)
        VALUES (1, ?1, ?2, ?3, ?4)
        ON CONFLICT (id) DO UPDATE SET max_queue_bytes = excluded.max_queue_bytes, when_full = excluded.when_full,
            max_age_seconds = excluded.max_age_seconds, set_at_ms = excluded.set_at_ms
        """

    /// Adds `?2` to the count of cause `?1`: an upsert (a deleted row comes back) that saturates, since an overflow
    /// would fail every later drop, and with it the writes that make room.
    static let count = """
        INSERT INTO queue_drops (cause, count) VALUES (?1, ?2)
        ON CONFLICT (cause) DO UPDATE SET count = CASE WHEN count > 9223372036854775807 - excluded.count
            THEN 9223372036854775807 ELSE count + excluded.count END
        """

    static let drops = "SELECT cause, count FROM queue_drops"
}

/// Why a record was given up: the rows of `queue_drops`.
enum DropCause: String {
    case oldest, refused, expired
}

extension QueueLimits {
    /// Reads the limits a daemon recorded, or `nil` when none did (no row, or a file before schema 7). Values a
    /// group member planted out of range are read as the safe ones: a negative size or age is no limit, an unknown
    /// policy is `refuse` (it gives nothing up).
    static func read(_ connection: Connection) throws(QueueError) -> (limits: QueueLimits, setAt: Int64)? {
        try connection.firstRow(QueueLimitsSQL.read, operation: "reading the queue's limits") {
            let limits = QueueLimits(
                maxQueueBytes: $0.int64(0), whenFull: WhenFull(rawValue: $0.text(1) ?? "") ?? .refuse,
                maxAgeSeconds: $0.int64(2))
            return (limits, $0.int64(3))
        }
    }
}

extension QueueDrops {
    /// The counts in `queue_drops` (a missing row counts 0).
    static func read(_ connection: Connection) throws(QueueError) -> QueueDrops {
        var drops = QueueDrops()
        let rows = try connection.rows(QueueLimitsSQL.drops, operation: "reading what the queue gave up") {
            ($0.text(0), max(0, $0.int64(1)))
        }
        for (cause, count) in rows {
            switch cause {
            case "oldest": drops.oldest = count
            case "refused": drops.refused = count
            case "expired": drops.expired = count
            default: break
            }
        }
        return drops
    }

    /// Adds `count` records given up for `cause`, in the caller's transaction.
    static func add(_ count: Int, cause: DropCause, _ connection: Connection) throws(QueueError) {
        guard count > 0 else { return }
        try connection.run(QueueLimitsSQL.count, operation: "counting what the queue gave up", cause.rawValue, count)
    }
}
