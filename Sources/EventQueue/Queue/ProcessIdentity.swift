#if canImport(Glibc)
    import Glibc
#endif

/// Names a process on this host so that another process can later tell whether it is still running: host, pid
/// and the process's start time (in clock ticks since boot, `/proc/PID/stat` field 22).
///
/// Why the start time: pids are reused; "pid 4242 started at tick 981233" is either that very process or gone.
enum ProcessIdentity {
    /// The start time of `pid` in clock ticks since boot, or `nil` when there is no such process (or no `/proc`).
    static func startTime(of pid: pid_t) -> UInt64? {
        guard let file = fopen("/proc/\(pid)/stat", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = fread(&buffer, 1, buffer.count - 1, file)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (the state), so field 22 is fields[19].
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    static let ownStartTime: UInt64? = startTime(of: getpid())

    /// Whether the process `owner` names (a consumer id, `host:pid:random[@start]`) is running on this host:
    /// `nil` when the owner is on another host (or its id cannot say), so the caller must not decide.
    static func isRunning(owner: String) -> Bool? {
        let parts = owner.split(separator: ":")
        guard parts.count >= 3, let pid = pid_t(parts[parts.count - 2]), pid > 0 else { return nil }
        let host = parts.dropLast(2).joined(separator: ":")
        guard host == QueueConsumer.hostName() else { return nil }
        let exists = kill(pid, 0) == 0 || errno == EPERM
        guard exists else { return false }
        // A start time in the id: the pid must still be that process, not a later one that reused the pid.
        let last = parts[parts.count - 1]
        if let at = last.firstIndex(of: "@"), let recorded = UInt64(last[last.index(after: at)...]),
            let actual = startTime(of: pid)
        {
            return recorded == actual
        }
        return true
    }
}
