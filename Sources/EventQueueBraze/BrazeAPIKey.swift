import EventQueueDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// A Braze REST API key, wrapped so that it cannot leak by accident: interpolating, printing, dumping or logging it
/// shows `BrazeAPIKey(redacted)`.
public struct BrazeAPIKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The key itself; internal so that only the sink (and the tests) can read it.
    let secret: String

    /// Wraps `secret`, trimmed of surrounding whitespace. Throws when it is empty or contains whitespace or
    /// control characters inside (which would corrupt the `Authorization` header).
    public init(_ secret: String) throws(BrazeConfigurationError) {
        try self.init(secret, source: "the given key")
    }

    init(_ secret: String, source: String) throws(BrazeConfigurationError) {
        let trimmed = Self.trimmed(secret)
        guard !trimmed.isEmpty else { throw .emptyKey(source: source) }
        guard trimmed.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            throw .malformedKey(source: source)
        }
        self.secret = trimmed
        // Never shown, even when a server echoes it back.
        ExternalText.registerSecret(trimmed)
    }

    public var description: String { "BrazeAPIKey(redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// The systemd credential name (`LoadCredential=braze-api-key:...`), read from `$CREDENTIALS_DIRECTORY`.
    public static let credentialName = "braze-api-key"
    /// The environment variable read last.
    public static let environmentVariable = "BRAZE_API_KEY"

    /// Finds the key, most explicit source first: `--api-key-file PATH` (the file's content, trimmed), then the
    /// systemd credential `$CREDENTIALS_DIRECTORY/braze-api-key`, then `$BRAZE_API_KEY`.
    ///
    /// Files and credentials keep the key out of the process environment (readable in `/proc`, inherited by
    /// children). A source that is present but unusable is an error, not a fall-through to another key.
    public static func resolve(
        apiKeyFile: String?, environment: [String: String]
    ) throws(BrazeConfigurationError) -> BrazeAPIKey {
        if let apiKeyFile {
            let source = "--api-key-file \(apiKeyFile)"
            return try BrazeAPIKey(try readFile(apiKeyFile, source: source), source: source)
        }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let path = directory + "/" + credentialName
            if access(path, F_OK) == 0 {
                let source = "the systemd credential \(path)"
                return try BrazeAPIKey(try readFile(path, source: source), source: source)
            }
        }
        if let value = environment[environmentVariable] {
            return try BrazeAPIKey(value, source: "$\(environmentVariable)")
        }
        throw .missingKey
    }

    private static func readFile(_ path: String, source: String) throws(BrazeConfigurationError) -> String {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever, with no message.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            throw .unreadableKeyFile(source: source, reason: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        try checkKeyFile(descriptor, path: path, source: source)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadableKeyFile(source: source, reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            // A key is a few dozen bytes; anything this large is the wrong file.
            guard bytes.count <= 64 * 1024 else { throw .malformedKey(source: source) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The opened key file must be a regular file (a FIFO would hang the start) and not readable by others, as ssh
    /// insists for a private key; group-readable is allowed (systemd credentials may be 0440).
    static func checkKeyFile(_ descriptor: CInt, path: String, source: String) throws(BrazeConfigurationError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw .unreadableKeyFile(source: source, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .notARegularKeyFile(source: source)
        }
        guard info.st_mode & 0o004 == 0 else {
            throw .keyFileReadableByOthers(source: source, path: path, mode: info.st_mode & 0o7777)
        }
        // Back to blocking reads for the content (a regular file never blocks anyway).
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
    }

    private static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
