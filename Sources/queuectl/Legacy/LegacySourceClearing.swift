import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// `import-legacy --clear-source`: removes the imported entries from the old store, without losing an entry an
/// old writer added meanwhile.
///
/// The recipe's writers read the whole store, change it and write it back, so the store can change under us at
/// any time. We remove only entries that are committed to the queue, and only from the version of the store we
/// imported: the file is read again (identity, size, modification time and every byte) right before an atomic
/// rename of the rewritten store over it, and if anything differs nothing is removed. The window left is between
/// that last read and the rename (microseconds); an old writer that read the store before our rename and writes
/// after it would lose our removal, not an entry of its own, and the next import would find those entries
/// already queued.
enum LegacySourceClearing {
    /// A test seam, honoured by debug builds only: a shell command run after the import committed and before the
    /// store is checked again, so a test can change the store at exactly that point (as a still-running old
    /// writer would).
    static let testHookVariable = "EVENTQUEUE_TEST_BEFORE_CLEAR"

    /// Removes the committed entries; returns how many, or `nil` when the store changed since it was read.
    static func clear(store: LegacyStore, outcomes: [LegacyImportSummary.Outcome]) throws -> Int? {
        var removed: [String: Set<Int>] = [:]
        for outcome in outcomes where outcome.committed {
            removed[outcome.entry.section, default: []].insert(outcome.entry.index)
        }
        let count = removed.values.reduce(0) { $0 + $1.count }
        guard count > 0 else { return 0 }
        runTestHook()
        guard try unchanged(store) else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try store.rewritten(removing: removed)
        } catch {
            throw fail(
                "cannot write the store \(store.path) back (\(error)); nothing was removed",
                status: ExitStatus.cannotCreate)
        }
        // Replace the file itself, not a symlink to it.
        let target =
            realpath(store.path, nil).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            } ?? store.path
        let temporary = try writeTemporary(bytes, beside: target, of: store)
        // Last look, right before the rename: the shorter this gap, the smaller the recipe's race.
        guard try unchanged(store) else {
            unlink(temporary)
            return nil
        }
        guard rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw fail(
                "cannot replace the store \(store.path): \(reason); nothing was removed",
                status: ExitStatus.cannotCreate)
        }
        syncDirectory(of: target)
        return count
    }

    static func unchanged(_ store: LegacyStore) throws -> Bool {
        guard let (bytes, identity, _) = try? LegacyStore.readFile(store.path) else { return false }
        return identity == store.identity && bytes == store.bytes
    }

    /// The new store in a temporary file next to the old one (same filesystem, so the rename is atomic), with
    /// its mode (and, as root, its owner), synced to disk.
    static func writeTemporary(_ bytes: [UInt8], beside storePath: String, of store: LegacyStore) throws -> String {
        let directory = SocketDirectory.parent(of: storePath)
        let base = String(storePath.split(separator: "/").last ?? "store")
        var template = Array("\(directory)/.\(base).eventqueue-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { $0.baseAddress.map { mkstemp($0) } ?? -1 }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else {
            throw fail(
                "cannot create a file in \(directory) to rewrite the store: \(String(cString: strerror(errno))); "
                    + "nothing was removed", status: ExitStatus.cannotCreate)
        }
        defer { close(fd) }
        var failure = bytes.withUnsafeBytes { writeAll(fd, $0) }.map { String(cString: strerror($0)) }
        if failure == nil, fchmod(fd, store.mode) != 0 { failure = String(cString: strerror(errno)) }
        if failure == nil, geteuid() == 0, fchown(fd, store.owner.uid, store.owner.gid) != 0 {
            failure = String(cString: strerror(errno))
        }
        if failure == nil, fsync(fd) != 0 { failure = String(cString: strerror(errno)) }
        if let failure {
            unlink(path)
            throw fail(
                "cannot write the rewritten store to \(path): \(failure); nothing was removed",
                status: ExitStatus.cannotCreate)
        }
        return path
    }

    static func syncDirectory(of path: String) {
        let fd = open(SocketDirectory.parent(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    /// Debug builds only (the tests'): a release binary never runs a command named by its environment.
    static func runTestHook() {
        #if DEBUG
            guard let command = QueueEnvironment.variable(testHookVariable), !command.isEmpty else { return }
            let arguments = ["/bin/sh", "-c", command]
            var pointers = arguments.map { strdup($0) }
            defer { pointers.forEach { free($0) } }
            pointers.append(nil)
            var child: pid_t = 0
            let spawned = posix_spawn(&child, "/bin/sh", nil, nil, pointers, environ)
            guard spawned == 0 else {
                writeStandardError(
                    "queuectl: warning: \(testHookVariable) could not run: \(String(cString: strerror(spawned)))\n")
                return
            }
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        #endif
    }
}
