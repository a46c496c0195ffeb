#if canImport(Glibc)
    import Glibc
#endif

/// What a `--db` path may be, checked before SQLite touches it.
///
/// Why: SQLite parses a name starting with `file:` as a URI, opens a character device, creates a dangling
/// symlink's target with the umask's mode, and its locks do not cover two hard links of one file; every writer in
/// the group can create or replace the queue file.
enum QueuePath {
    enum State: Equatable {
        /// Nothing there: the queue will be created (mode 0660).
        case missing
        /// A regular file of 0 bytes: what a foreign SQLite client leaves when it opens a missing queue and writes
        /// nothing. Treated as missing: initialised as a queue, with its mode set to 0660.
        case empty
        /// A regular file with content (a queue, or something to refuse later by its header).
        case existing
    }

    /// The name to give `sqlite3_open_v2`: the path itself, except that a relative path beginning with `file:` is
    /// prefixed with `./`, so that SQLite (built with URI filenames on by default) takes it as a file name.
    static func sqliteName(for path: String) -> String {
        path.hasPrefix("file:") ? "./" + path : path
    }

    /// Checks `path` and says what is there. Throws `QueueError.unsafeQueueFile` (exit 78) for anything that is
    /// not a regular file with one link, or missing. `allowingLinks` is for readers that open the file read-only
    /// (`check`, `salvage`): reading a hard-linked file is safe, and salvage is how its records get out.
    static func inspect(_ path: String, allowingLinks: Bool = false) throws(QueueError) -> State {
        var link = stat()
        // Nothing there, or not reachable (EACCES and the like): the open reports that with its access diagnosis.
        guard lstat(path, &link) == 0 else { return .missing }
        var info = link
        if link.st_mode & S_IFMT == S_IFLNK {
            guard stat(path, &info) == 0 else {
                throw QueueError.unsafeQueueFile(
                    path: path,
                    reason: "it is a symbolic link to a missing file (\(target(of: path))); EventQueue does not create "
                        + "files through a dangling link: create the queue at the target's path, or remove the link")
            }
        }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            throw QueueError.unsafeQueueFile(
                path: path,
                reason: "it is \(typeNames[type] ?? "a special file"), not a regular file; point --db at a queue "
                    + "file (a new one is created where nothing exists)")
        }
        guard info.st_nlink <= 1 || allowingLinks else {
            throw QueueError.unsafeQueueFile(
                path: path,
                reason: "it has \(info.st_nlink) hard links; SQLite's locks do not cover two names of one file, so "
                    + "writers through both names would corrupt it. Remove the other names (find them with `find / "
                    + "-samefile \(path)`) and use one")
        }
        return info.st_size == 0 ? .empty : .existing
    }

    /// Whether `path` may be an SQLite database, judged before SQLite is let near it (`check`, `salvage`): its first
    /// 16 bytes are SQLite's magic, or a non-empty `-wal` lies beside it, since a power cut inside a checkpoint can
    /// tear the main file's first sector while the WAL still holds page 1 whole.
    static func mayBeSQLite(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 16)
        if read(fd, &header, 16) == 16 && header == Array("SQLite format 3\0".utf8) { return true }
        var wal = stat()
        return stat(path + "-wal", &wal) == 0 && wal.st_mode & S_IFMT == S_IFREG && wal.st_size > 0
    }

    /// Room SQLite needs beside the queue to open it first: the `-shm`'s first 32 KiB page, and some to spare.
    static let sharedMemoryRoomBytes: Int64 = 64 * 1024

    /// Refuses to open a queue whose `-shm` does not exist yet on a filesystem without room for it.
    ///
    /// Why: on a full disk SQLite's open fails after creating the `-shm` (and an empty `-wal`), and only a successful
    /// last close removes them; removing them after the failure is not safe (another process may be opening them).
    static func requireRoomForSharedMemory(_ path: String) throws(QueueError) {
        guard access(path + "-shm", F_OK) != 0 else { return }
        var stats = statvfs()
        // A read-only filesystem is reported as such by the open (QueuePath.accessProblem), not as full.
        guard statvfs(QueuePath.directoryName(of: path), &stats) == 0, stats.f_flag & UInt(ST_RDONLY) == 0 else {
            return
        }
        // Root may use the blocks reserved for it; everyone else only the available ones.
        let blocks = geteuid() == 0 ? stats.f_bfree : stats.f_bavail
        let free = Int64(blocks) * Int64(stats.f_frsize)
        guard free < sharedMemoryRoomBytes else { return }
        throw QueueError.diskFull(
            path: path,
            detail: "\(free) bytes free, too few for SQLite to create its \(path)-shm (it needs 32 KiB); nothing was "
                + "created")
    }

    /// A 0-byte file gets the mode 0660 a queue created here gets, so a foreign client's umask cannot lock the
    /// writers' group out (only its owner or root can change it; anyone else gets the open's access diagnosis).
    static func adoptEmpty(_ path: String) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            // A symlink to a 0-byte file: change the target's mode through the path instead.
            chmod(path, 0o660)
            return
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size == 0 else { return }
        if info.st_mode & 0o7777 != 0o660 { fchmod(fd, 0o660) }
    }

    private static let typeNames: [mode_t: String] = [
        S_IFDIR: "a directory", S_IFCHR: "a character device", S_IFBLK: "a block device",
        S_IFIFO: "a FIFO (named pipe)",
        S_IFSOCK: "a socket",
    ]

    private static func target(of path: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return "?" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
