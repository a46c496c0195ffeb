#if canImport(Glibc)
    import Glibc
#endif

/// The secret that makes an erasure an operator's act: a Braze delete is sent only for an erasure row whose `grant`
/// is the HMAC-SHA-256, under this key, of the row's id, identifier type and filing key.
///
/// Why a key and not a check in `queuectl`: any member of the writers' group can write the queue file with any
/// SQLite client, so a check in our tools stops no one; whoever can read the key (root, the daemon, the package's
/// admin group) may delete users at Braze. Binding the row's id (ids never repeat) means a grant copied from one
/// row authorizes nothing else.
public struct ErasureKey: Sendable, Hashable {
    /// Where the package keeps the key.
    public static let packagedPath = "/etc/eventqueue/erasure-key"
    /// The group the package lets delete users at Braze.
    public static let adminGroup = "eventqueue-admins"

    /// The key file's path.
    public let path: String
    private let secret: [UInt8]

    /// The key file for the queue at `queuePath`: `$EVENTQUEUE_ERASURE_KEY` when set, else `packagedPath` when it
    /// exists, else `QUEUE-erasure-key` beside the queue (created by its daemon).
    public static func path(forQueue queuePath: String) -> String {
        if let configured = getenv("EVENTQUEUE_ERASURE_KEY").map({ String(cString: $0) }), !configured.isEmpty {
            return configured
        }
        var status = stat()
        return lstat(packagedPath, &status) == 0 ? packagedPath : queuePath + "-erasure-key"
    }

    /// The key to sign erasures with, for `forget` with a Braze delete: read from `path(forQueue:)`, created there
    /// first when it is missing beside the queue. Throws `erasureNotPermitted` when this process cannot read it.
    public static func forSigning(queuePath: String) throws(QueueError) -> ErasureKey {
        let path = path(forQueue: queuePath)
        switch read(path, createIfMissing: path == queuePath + "-erasure-key") {
        case .success(let key): return key
        case .failure(let problem): throw QueueError.erasureNotPermitted(path: path, detail: problem.description)
        }
    }

    /// The key a consumer checks grants with: as `forSigning`, from a file only root or this user can have written
    /// (whoever could replace it could grant anything). Otherwise why not: the consumer then sends no erasure.
    public static func forVerifying(queuePath: String) -> Result<ErasureKey, ErasureProblem> {
        let path = path(forQueue: queuePath)
        return read(path, createIfMissing: path == queuePath + "-erasure-key", trustedOwnersOnly: true)
    }

    /// The key `secret` (tests; a key file holds 64 hex digits).
    init(path: String, secret: [UInt8]) {
        self.path = path
        self.secret = secret
    }

    /// The grant of an erasure row: hex HMAC-SHA-256 of its id, identifier type and filing key.
    public func grant(id: Int64, type: Erasure.IdentifierType, userKey: String) -> String {
        let message = Array("eventqueue-erasure-v1\n\(id)\n\(type.rawValue)\n\(userKey)".utf8)
        return hexDigits(SHA256.hmac(key: secret, message: message))
    }

    /// Whether `grant` is the grant of that row (compared in constant time).
    public func verifies(_ grant: String?, id: Int64, type: Erasure.IdentifierType, userKey: String) -> Bool {
        guard let grant else { return false }
        let expected = Array(self.grant(id: id, type: type, userKey: userKey).utf8)
        let given = Array(grant.utf8)
        guard given.count == expected.count else { return false }
        var difference: UInt8 = 0
        for index in given.indices { difference |= given[index] ^ expected[index] }
        return difference == 0
    }

    private static func read(
        _ path: String, createIfMissing: Bool, trustedOwnersOnly: Bool = false
    ) -> Result<ErasureKey, ErasureProblem> {
        var descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if descriptor < 0, errno == ENOENT, createIfMissing {
            if let problem = create(path) { return .failure(problem) }
            descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            return .failure(ErasureProblem(description: "cannot read the erasure key \(path): \(reason)"))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            return .failure(ErasureProblem(description: "the erasure key \(path) is not a regular file"))
        }
        if trustedOwnersOnly {
            guard status.st_uid == 0 || status.st_uid == geteuid(), status.st_mode & 0o022 == 0 else {
                return .failure(
                    ErasureProblem(
                        description: "the erasure key \(path) is owned by uid \(status.st_uid) or writable by "
                            + "others (mode \(String(status.st_mode & 0o777, radix: 8))): only root or uid "
                            + "\(geteuid()) may own it, with no write permission for group or others"))
            }
        }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }
        var text = String(decoding: buffer[0..<max(0, count)], as: UTF8.self).drop(while: isSpace)
        while let last = text.last, isSpace(last) { text.removeLast() }
        guard let secret = unhex(text), secret.count >= 16 else {
            return .failure(ErasureProblem(description: "the erasure key \(path) is not 32 to 64 hex digits"))
        }
        return .success(ErasureKey(path: path, secret: secret))
    }

    /// A new key of 32 random bytes (the system's generator: getrandom), readable by the owner and group only.
    private static func create(_ path: String) -> ErasureProblem? {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else {
            // Another process created it first: read theirs.
            if errno == EEXIST { return nil }
            return ErasureProblem(
                description: "cannot create the erasure key \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let text = Array((hexDigits(bytes) + "\n").utf8)
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == text.count, fsync(descriptor) == 0 else {
            unlink(path)
            return ErasureProblem(description: "cannot write the erasure key \(path)")
        }
        return nil
    }

    private static func unhex(_ text: Substring) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 128 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
