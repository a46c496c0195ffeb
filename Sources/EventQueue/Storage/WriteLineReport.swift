import CWriteTurn

#if canImport(Glibc)
    import Glibc
#endif

/// What the writers' line of a queue (`<queue>-turn`) looks like from outside, without joining it, for `status`,
/// `check` and the metrics: a line that stopped working is seen.
public struct WriteLineReport: Sendable, Hashable {
    /// Whether writers of this release wait in line.
    public enum State: Sendable, Hashable {
        /// No `-turn` file: no writer of this release has written since the file was created (or it was removed).
        case absent
        /// Writers wait in line; `busy` while one has the turn or waits for it.
        case inUse(busy: Bool)
        /// Writers write without the line, for `reason`.
        case off(reason: String)
    }

    /// Absent, in use or off, as the last look at the file found it.
    public var state: State
    /// Turns handed on since the file was made (all writers; wraps).
    public var handoffs: UInt64 = 0
    /// Tickets passed over because their owner died or left.
    public var passedOver: UInt64 = 0
    /// Times a writer found the page damaged (another layout, garbage, impossible counters) and repaired it.
    public var repairs: UInt64 = 0
    /// Writes that went around a live holder past the stale limit (a stopped or stuck process).
    public var bypasses: UInt64 = 0
    /// Writers waiting behind the holder.
    public var waiting: Int = 0
    /// How long the holder has had the turn (nil: nobody has it).
    public var heldNanoseconds: Int64?
    /// How long since a turn was last given back (nil: never).
    public var idleNanoseconds: Int64?

    /// A holder that has had the turn longer than this is stuck: writers go around it.
    public var holderIsStuck: Bool { (heldNanoseconds ?? 0) > WriteTurn.staleNanoseconds }

    /// One line for `status` and `check`: "in use (…)", "not used yet" or "off: reason".
    public var summary: String {
        switch state {
        case .absent:
            return "not used yet (no writer of this release has written)"
        case .off(let reason):
            return "off: \(reason)"
        case .inUse(let busy):
            var parts = ["\(handoffs) turns handed on", "\(passedOver) passed over", "\(repairs) repaired"]
            if bypasses > 0 { parts.append("\(bypasses) went around a stuck holder") }
            var head = busy ? "in use, \(waiting) waiting" : "in use, idle"
            if holderIsStuck, let held = heldNanoseconds {
                head =
                    "in use, but its holder has had the turn for \(held / 1_000_000_000) s (stopped?); writers "
                    + "go around it"
            }
            return head + " (" + parts.joined(separator: ", ") + ")"
        }
    }

    /// Reads the line of the queue at `queuePath` (never creates, maps or changes it).
    public static func read(queuePath: String) -> WriteLineReport {
        let descriptor = Glibc.open(
            WriteTurn.path(forQueue: queuePath), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT { return WriteLineReport(state: .absent) }
            return WriteLineReport(state: .off(reason: "its -turn file cannot be opened (\(errnoText()))"))
        }
        defer { Glibc.close(descriptor) }
        if let problem = problem(descriptor) { return WriteLineReport(state: .off(reason: problem)) }
        var peeked = eq_turn_state()
        guard eq_turn_peek(descriptor, &peeked) == 0 else {
            return WriteLineReport(state: .off(reason: "its -turn file cannot be read (\(errnoText()))"))
        }
        guard peeked.usable != 0 else {
            return WriteLineReport(
                state: .off(
                    reason: "its -turn file holds no line of this release's layout (damaged, truncated, or a newer "
                        + "release's); the next writer of this release repairs it unless it is a newer release's"))
        }
        return WriteLineReport(
            state: .inUse(busy: peeked.busy != 0), handoffs: peeked.handoffs, passedOver: peeked.passed_over,
            repairs: peeked.repairs, bypasses: peeked.bypasses, waiting: Int(peeked.waiting),
            heldNanoseconds: peeked.busy != 0 && peeked.held_ns > 0 ? peeked.held_ns : nil,
            idleNanoseconds: peeked.idle_ns == Int64.max ? nil : peeked.idle_ns)
    }

    /// Why an open `-turn` file is not a line writers may use (nil when it may be): only a regular file with one
    /// name, so that nothing a group member put there (a link to another file, a FIFO) is ever written or waited on.
    static func problem(_ descriptor: Int32) -> String? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return "its -turn file cannot be examined (\(errnoText()))" }
        guard status.st_mode & S_IFMT == S_IFREG else { return "its -turn file is not a regular file" }
        guard status.st_nlink == 1 else { return "its -turn file has \(status.st_nlink) names (hard links)" }
        return nil
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
