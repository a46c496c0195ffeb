#if canImport(Glibc)
    import Glibc
#endif

/// Whether the directory of a control socket can be trusted: nobody but its owners can put a socket there or
/// move ours aside.
///
/// The attack: for a non-root daemon the default socket lives under `/tmp/eventqueue-$UID/eventqueue/`. Another
/// user can create that directory first (mode 0777, or a symlink into their home); the daemon then binds its
/// socket in the attacker's directory, the attacker moves it aside and answers `queuectl drain` in its place.
///
/// The rule, as ssh-agent and systemd apply it: every directory on the way to the socket, from `/`, is owned by
/// root or by one of `trustedOwners`, and none is writable by others (group or world) unless it has the sticky
/// bit (`/tmp`: others cannot rename or delete what we put there). A symbolic link on the way is followed only
/// when root or a trusted owner made it (`/var/run` -> `/run`); any other is refused, never followed.
public enum SocketDirectory {
    /// Why `path`'s directory cannot be trusted, or `nil` when it can. `trustedOwners` are the uids besides
    /// root that may own a directory on the way (the daemon: itself; `queuectl`: itself and the daemon's
    /// user). `trustedGroup`, when given, may have write access too (the daemon's own group, for a umask of 002).
    public static func problem(
        socketPath path: String, trustedOwners: Set<uid_t>, trustedGroup: gid_t? = nil
    ) -> String? {
        var directory = parent(of: path)
        if !directory.hasPrefix("/") { directory = currentDirectory() + "/" + directory }
        var current = ""
        var components = directory.split(separator: "/").map(String.init)
        var hops = 0
        var checked: [String] = ["/"]
        while !components.isEmpty {
            let component = components.removeFirst()
            if component == "." { continue }
            if component == ".." {
                current = parent(of: current.isEmpty ? "/" : current)
                if current == "/" { current = "" }
                continue
            }
            let candidate = current + "/" + component
            var info = stat()
            guard lstat(candidate, &info) == 0 else {
                if errno == ENOENT || errno == ENOTDIR {
                    return "the directory \(candidate) does not exist; create it, or pass --socket PATH in an "
                        + "existing directory"
                }
                return "cannot inspect \(candidate): \(String(cString: strerror(errno)))"
            }
            if info.st_mode & S_IFMT == S_IFLNK {
                guard info.st_uid == 0 || trustedOwners.contains(info.st_uid) else {
                    return "\(candidate) is a symbolic link owned by uid \(info.st_uid), not by root or this user; "
                        + "it is not followed"
                }
                hops += 1
                guard hops <= 40 else { return "too many symbolic links on the way to \(directory)" }
                var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let count = readlink(candidate, &target, target.count - 1)
                guard count > 0 else { return "cannot read the symbolic link \(candidate)" }
                let destination = String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if destination.hasPrefix("/") { current = "" }
                components = destination.split(separator: "/").map(String.init) + components
                continue
            }
            current = candidate
            checked.append(candidate)
        }
        for directory in checked {
            if let problem = problem(directory: directory, trustedOwners: trustedOwners, trustedGroup: trustedGroup) {
                return problem
            }
        }
        return nil
    }

    /// One directory: owned by root or a trusted owner, and not writable by others unless sticky.
    static func problem(directory: String, trustedOwners: Set<uid_t>, trustedGroup: gid_t?) -> String? {
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            return "cannot inspect \(directory): \(String(cString: strerror(errno)))"
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(directory) is not a directory" }
        guard info.st_uid == 0 || trustedOwners.contains(info.st_uid) else {
            return "\(directory) is owned by uid \(info.st_uid), not by root or this user: another user may have "
                + "created it to take over the socket; remove it (or pass --socket PATH in a directory of yours)"
        }
        let sticky = info.st_mode & 0o1000 != 0
        let worldWritable = info.st_mode & 0o002 != 0
        let groupWritable = info.st_mode & 0o020 != 0 && info.st_gid != trustedGroup
        if (worldWritable || groupWritable) && !sticky {
            return "\(directory) is writable by \(worldWritable ? "every user" : "group \(info.st_gid)") "
                + "(mode \(String(info.st_mode & 0o7777, radix: 8))): others could replace the socket; run "
                + "`chmod go-w \(directory)` or pass --socket PATH in a directory of yours"
        }
        return nil
    }

    /// The directory part of `path` (`.` for a bare name, `/` for a file in the root).
    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let head = String(path[..<slash])
        return head.isEmpty ? "/" : head
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "" }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text == "/" ? "" : text
    }
}
