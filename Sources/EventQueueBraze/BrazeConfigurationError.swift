#if canImport(Glibc)
    import Glibc
#endif

/// Why the Braze sink cannot be configured. Messages say what to do, and never include the key.
public enum BrazeConfigurationError: Error, Hashable, CustomStringConvertible {
    case missingKey
    case unreadableKeyFile(source: String, reason: String)
    case emptyKey(source: String)
    case malformedKey(source: String)
    case invalidBaseURL(String)
    case notARegularKeyFile(source: String)
    case keyFileReadableByOthers(source: String, path: String, mode: mode_t)

    public var description: String {
        switch self {
        case .missingKey:
            return "no Braze API key: pass --api-key-file PATH, load the systemd credential "
                + "'\(BrazeAPIKey.credentialName)' (LoadCredential=), or set $\(BrazeAPIKey.environmentVariable)"
        case .unreadableKeyFile(let source, let reason):
            return "cannot read the Braze API key from \(source): \(reason); check the path and its permissions"
        case .emptyKey(let source):
            return "the Braze API key from \(source) is empty; put the REST API key (users.track permission) there"
        case .malformedKey(let source):
            return "the Braze API key from \(source) is malformed (whitespace or control characters inside, or "
                + "far too long); it must be the REST API key alone, on one line"
        case .notARegularKeyFile(let source):
            return "the Braze API key from \(source) is not a regular file (a FIFO, device or directory); "
                + "put the key in a plain file"
        case .keyFileReadableByOthers(let source, let path, let mode):
            return "the Braze API key from \(source) is readable by every user (mode "
                + "\(String(mode, radix: 8))); refused: run `chmod o-rwx \(path)` (0600 or 0640), and consider "
                + "rotating the key"
        case .invalidBaseURL(let url):
            return "invalid Braze base URL '\(url)': expected e.g. https://rest.iad-01.braze.com"
        }
    }
}
