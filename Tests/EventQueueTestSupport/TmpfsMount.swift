import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the tests run as root: mounting a small filesystem and running a client as another user need it.
/// CI runs as root; elsewhere those tests are skipped (their `.enabled(if:)` comment says so).
public var runningAsRoot: Bool { getuid() == 0 }

/// A small tmpfs mounted for one test (root only), so a test can fill a disk or make it read-only without
/// touching anything else. Unmounted (lazily, so an open file cannot keep it) by `unmount()` or at deinit,
/// which also runs when the test fails.
public final class TmpfsMount: @unchecked Sendable {
    public let path: String
    /// Kept so the scratch directory (the mount point's parent) outlives the mount.
    private let scratch: Scratch
    private let lock = NSLock()
    private var mounted = false

    /// Mounts a tmpfs of `megabytes` at a new directory `name` inside `scratch`.
    public init(in scratch: Scratch, name: String = "mnt", megabytes: Int = 64) throws {
        self.scratch = scratch
        path = scratch.file(name)
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw ScratchError(message: "mkdir \(path): \(String(cString: strerror(errno)))")
        }
        guard mount("tmpfs", path, "tmpfs", 0, "size=\(megabytes)m,mode=0755") == 0 else {
            throw ScratchError(message: "mount tmpfs on \(path): \(String(cString: strerror(errno)))")
        }
        mounted = true
    }

    public func file(_ name: String) -> String { path + "/" + name }

    /// Remounts read-only (or read-write again). Fails with EBUSY while a file on it is open for writing.
    public func remount(readOnly: Bool) throws {
        let flags = UInt(MS_REMOUNT) | (readOnly ? UInt(MS_RDONLY) : 0)
        guard mount("tmpfs", path, "tmpfs", flags, nil) == 0 else {
            throw ScratchError(message: "remount \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Bytes free for an unprivileged writer.
    public var freeBytes: Int64 {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return -1 }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// Writes a filler file of `bytes` bytes (real pages: tmpfs counts them), to make the disk nearly full.
    @discardableResult
    public func fill(_ name: String = "filler", bytes: Int64) throws -> String {
        let filler = file(name)
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ScratchError(message: "open \(filler): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        var remaining = bytes
        while remaining > 0 {
            let count = Int(min(Int64(chunk.count), remaining))
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, count) }
            guard written > 0 else {
                throw ScratchError(message: "filling \(filler): \(String(cString: strerror(errno)))")
            }
            remaining -= Int64(written)
        }
        return filler
    }

    public func unmount() {
        lock.withLock {
            guard mounted else { return }
            if umount2(path, Int32(MNT_DETACH)) == 0 { mounted = false }
        }
    }

    deinit {
        unmount()
    }
}

extension TmpfsMount {
    /// Writes a filler file until only `bytes` stay free.
    @discardableResult
    public func fill(_ name: String = "filler", leaving bytes: Int64) throws -> String {
        try fill(name, bytes: freeBytes - bytes)
    }
}

/// A queue on a small filesystem of its own, for the full-disk and read-only tests.
public struct TmpfsQueue: Sendable {
    /// The test's directory (logs, the daemon's socket and sink file: not on the small filesystem).
    public let scratch: Scratch
    public let mount: TmpfsMount
    /// The queue file, on the mount.
    public let db: String
}

/// Runs `body` with a queue of `records` pending events (`makeQueue`) on a tmpfs of `megabytes` (root only:
/// such tests carry `.enabled(if: runningAsRoot, …)`), unmounted afterwards even when `body` throws.
public func withQueueOnTmpfs<T>(
    megabytes: Int = 64, records: Int, _ body: (TmpfsQueue) async throws -> T
) async throws -> T {
    let scratch = Scratch()
    let mount = try TmpfsMount(in: scratch, megabytes: megabytes)
    defer { mount.unmount() }
    let queue = TmpfsQueue(scratch: scratch, mount: mount, db: mount.file("q.db"))
    try await makeQueue(queue.db, records: records, in: scratch)
    return try await body(queue)
}
