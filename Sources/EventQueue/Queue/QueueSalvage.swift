import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Copies every readable record of a damaged queue file into a fresh one.
///
/// The old file is never changed: opened `immutable=1` when it has no `-wal` (nothing SQLite could decide to
/// write), with `mode=ro` when a non-empty `-wal` may hold committed records `immutable` would ignore. Stop the
/// writers and the daemon on it first.
///
/// Rows are read one at a time, in id order. Past a failed read the next readable id is found by probing, doubling
/// the step then bisecting, so one bad page loses only its rows; the ids `records_live` still lists are then tried
/// one by one, recovering rows between damaged regions and counting those really lost. Every copied payload is
/// validated again, as the consumer would.
public enum QueueSalvage {
    /// Salvages `source` into `destination`, which must not exist; on a failure `destination` is removed again.
    /// Every column is validated as another user's input (`StoredRow`): ids out of range or taken are renumbered,
    /// times and attempts brought into range.
    public static func run(
        from source: String, to destination: String, now: Int64 = WallClock.nowMilliseconds(), maxAttempts: Int = 10
    ) throws(QueueError) -> SalvageReport {
        let reader = try openSource(source)
        defer { reader.close() }
        guard try reader.hasTable("records") else { throw QueueError.notAQueueFile(path: source) }
        try createExclusively(destination)
        do {
            let writer = try QueueFile(path: destination, options: QueueOptions(minimumFreeBytes: 0))
            defer { writer.close() }
            var report = SalvageReport(source: source, destination: destination)
            try writer.connection.write("salvaging records") { () throws(QueueError) in
                var copier = SalvageCopier(
                    reader: reader, writer: writer.connection, now: now, maxAttempts: Int64(max(1, maxAttempts)))
                try copier.copyRecords(into: &report)
                try copier.carrySequence()
                try copier.copyRenumbered(into: &report)
                try copier.copyDeliveredKeys(into: &report)
            }
            return report
        } catch {
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(destination + suffix) }
            throw error
        }
    }

    static func openSource(_ path: String) throws(QueueError) -> Connection {
        // A FIFO would block the header read below; a device or a directory is not a queue.
        guard try QueuePath.inspect(path, allowingLinks: true) != .missing else {
            throw QueueError.cannotOpen(path: path, reason: "no such file")
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw QueueError.cannotOpen(path: path, reason: String(cString: strerror(errno)))
        }
        guard QueuePath.mayBeSQLite(path) else { throw QueueError.notAQueueFile(path: path) }
        let hasWAL = QueueAdmin.fileSize(path + "-wal") > 0
        let connection = try Connection(
            path: path, busyTimeoutMilliseconds: 5_000, readOnly: true,
            uriParameters: hasWAL ? "mode=ro" : "mode=ro&immutable=1")
        do {
            // writable_schema lets a truncated file (header page count past the end) be read up to the cut;
            // the connection is read-only, so nothing can be written. cell_size_check turns more garbage cells
            // into SQLITE_CORRUPT instead of garbage rows.
            try connection.execute("PRAGMA writable_schema = ON", operation: "opening for salvage")
            try connection.execute("PRAGMA cell_size_check = ON", operation: "opening for salvage")
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    private static func createExclusively(_ path: String) throws(QueueError) {
        if access(path + "-wal", F_OK) == 0 {
            throw QueueError.cannotOpen(
                path: path, reason: "\(path)-wal exists; salvage writes only to a new file: choose another path")
        }
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o660)
        guard fd >= 0 else {
            let code = errno
            let reason =
                code == EEXIST
                ? "it already exists; salvage writes only to a new file: choose another path or move it away"
                : String(cString: strerror(code))
            throw QueueError.cannotOpen(path: path, reason: reason)
        }
        fchmod(fd, 0o660)
        close(fd)
    }
}
