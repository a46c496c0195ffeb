#if canImport(Glibc)
    import Glibc
#endif

/// Creating the queue file, and saying why a process cannot use it, in words an operator can act on.
extension QueuePath {
    /// Creates the database file with mode 0660 before SQLite opens it (the `-wal` and `-shm` get its mode).
    static func createFileIfMissing(path: String) throws(QueueError) {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o660)
        if fd >= 0 {
            fchmod(fd, 0o660)  // the umask may have removed group bits
            Glibc.close(fd)
            return
        }
        let code = errno
        switch code {
        case EEXIST:
            return
        case ENOENT:
            throw QueueError.cannotOpen(
                path: path,
                reason: "the directory \(directoryName(of: path)) does not exist; create it or choose another --db")
        case EACCES, EPERM:
            throw QueueError.cannotOpen(
                path: path,
                reason: accessProblem(path)
                    ?? "permission denied creating it in \(directoryName(of: path)); run as a user in the "
                    + "queue's group or fix the directory's permissions")
        case EROFS:
            throw QueueError.readOnly(path: path, detail: "the filesystem is mounted read-only")
        case ENOSPC:
            throw QueueError.diskFull(path: path, detail: "no space to create the file")
        default:
            throw QueueError.cannotOpen(path: path, reason: String(cString: strerror(code)))
        }
    }

    /// Why this process cannot use the queue file and its `-wal` and `-shm`; `nil` when nothing is visibly wrong.
    static func accessProblem(_ path: String) -> String? {
        let directory = directoryName(of: path)
        let user = "user \(geteuid()) (group \(getegid()))"
        var directoryInfo = stat()
        guard stat(directory, &directoryInfo) == 0 else {
            if errno == ENOENT {
                return "the directory \(directory) does not exist; create it or choose another --db"
            }
            return "\(user) cannot reach the directory \(directory) (\(String(cString: strerror(errno)))); fix "
                + "the permissions of its parent directories"
        }
        if access(directory, X_OK) != 0 {
            return "\(user) may not enter the directory \(directory) (mode \(octal(directoryInfo.st_mode)), owner "
                + "\(directoryInfo.st_uid), group \(directoryInfo.st_gid)); run as its owner or a member of its group, "
                + "or fix the directory's permissions"
        }
        var filesystem = statvfs()
        if statvfs(directory, &filesystem) == 0, filesystem.f_flag & UInt(ST_RDONLY) != 0 {
            return "the filesystem holding \(directory) is mounted read-only; remount it read-write or move the "
                + "queue to a writable filesystem"
        }
        var fileInfo = stat()
        if stat(path, &fileInfo) == 0, access(path, R_OK | W_OK) != 0 {
            return "\(user) may not read and write it (mode \(octal(fileInfo.st_mode)), owner \(fileInfo.st_uid), "
                + "group \(fileInfo.st_gid)); run as its owner or a member of its group, or fix its permissions "
                + "(queue files are 0660)"
        }
        if access(directory, W_OK | X_OK) != 0 {
            return "\(user) may not create files in \(directory) (mode \(octal(directoryInfo.st_mode)), owner "
                + "\(directoryInfo.st_uid), group \(directoryInfo.st_gid)), and SQLite needs its -wal and -shm "
                + "there; run as its owner or a member of its group, or fix the directory's permissions"
        }
        for suffix in ["-wal", "-shm"] {
            var info = stat()
            if stat(path + suffix, &info) == 0, access(path + suffix, R_OK | W_OK) != 0 {
                return "\(user) may not read and write \(path)\(suffix) (mode \(octal(info.st_mode)), owner "
                    + "\(info.st_uid)); fix its permissions (0660, the queue's group)"
            }
        }
        return nil
    }

    private static func octal(_ mode: mode_t) -> String {
        "0" + String(Int(mode & 0o7777), radix: 8)
    }

    /// A path as the path part of an SQLite `file:` URI: `%`, `?` and `#` are percent-encoded.
    static func uriEscaped(_ path: String) -> String {
        var escaped = ""
        for character in path.unicodeScalars {
            switch character {
            case "%": escaped += "%25"
            case "?": escaped += "%3F"
            case "#": escaped += "%23"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    static func directoryName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = path[..<slash]
        return directory.isEmpty ? "/" : String(directory)
    }
}
