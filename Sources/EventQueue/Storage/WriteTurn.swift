import CWriteTurn

#if canImport(Glibc)
    import Glibc
#endif

/// The line this release's writers of one queue file wait in, so that the write lock goes to them in arrival order.
///
/// Why: SQLite's write lock is not queued, so a busy-handler sleep can be passed over again and again. The line is
/// a ticket lock in the page of `<queue>-turn` (`CWriteTurn` states its invariants): giving the turn back hands it
/// to the next ticket, and a dead owner's ticket is passed over. It only orders the attempts (SQLite's lock still
/// decides), so anything wrong with the line means writing as before, never an error.
final class WriteTurn {
    private var turn = eq_turn(page: nil, descriptor: -1, ticket: 0, held: 0, ops: nil)

    /// A live holder that has had the turn this long is not waited for (stopped, or stuck in a long wait of its own).
    static let staleNanoseconds: Int64 = 1_000_000_000
    /// The longest wait in line; then the writer waits for SQLite's lock directly, as writers without the line do.
    static let longestWaitNanoseconds: Int64 = 1_000_000_000

    private init(descriptor: Int32) {
        turn.descriptor = descriptor
    }

    deinit {
        eq_turn_unmap(&turn)
        if turn.descriptor >= 0 { Glibc.close(turn.descriptor) }
    }

    static func path(forQueue path: String) -> String { path + "-turn" }

    /// Opens (creating with the queue file's mode and owner) and maps the line, or nil: write without it then.
    static func open(queuePath: String) -> WriteTurn? {
        var queue = stat()
        guard stat(queuePath, &queue) == 0 else { return nil }
        let path = path(forQueue: queuePath)
        let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
        var descriptor = Glibc.open(path, flags | O_CREAT | O_EXCL, mode_t(0o600))
        if descriptor >= 0 {
            // The umask may have removed the group's bits; root's file must belong to the queue's owner.
            fchmod(descriptor, queue.st_mode & 0o777)
            if geteuid() == 0 { fchown(descriptor, queue.st_uid, queue.st_gid) }
        } else if errno == EEXIST {
            descriptor = Glibc.open(path, flags)
        }
        guard descriptor >= 0 else { return nil }
        guard WriteLineReport.problem(descriptor) == nil else {
            Glibc.close(descriptor)
            return nil
        }
        let line = WriteTurn(descriptor: descriptor)
        guard eq_turn_map(&line.turn, descriptor) == 0 else { return nil }
        return line
    }

    /// Waits in line for at most `timeoutNanoseconds` (and never for a live holder older than `staleNanoseconds`).
    /// Returns whether the turn is held; when not, the caller writes anyway, and SQLite's lock still serializes.
    /// Not re-entrant: a write inside a held turn must not take it again.
    func take(timeoutNanoseconds: Int64, staleNanoseconds: Int64 = WriteTurn.staleNanoseconds) -> Bool {
        eq_turn_acquire(&turn, min(timeoutNanoseconds, Self.longestWaitNanoseconds), staleNanoseconds)
            == Int32(EQ_TURN_ACQUIRED)
    }

    /// Hands the turn to the next in line (nothing when not held).
    func give() {
        eq_turn_release(&turn)
    }

    /// Whether writers wait behind the holder: the holder then polls SQLite's lock eagerly (they all wait on it).
    var othersWaiting: Bool { eq_turn_waiting(&turn) > 0 }
}
