import Synchronization

/// Text that comes from outside (a sink's answer, a row another writer stored, a header), made safe to log, store
/// or show.
///
/// - **Secrets echoed back.** A sink that puts the `Authorization` header in its error message would carry the API
///   key into logs, `/status` and dead letters. Every secret the process holds is registered once
///   (`registerSecret(_:)`), and `redacted(_:)` replaces it with `[redacted]`.
/// - **Terminal control sequences** would clear or retitle the terminal of whoever reads the log. `escaped(_:)`
///   writes every control character and bidirectional override as a visible `\x1B` / `\u{202E}` escape.
public enum ExternalText {
    private static let secrets = Mutex<Set<String>>([])

    /// What replaces a secret.
    public static let redaction = "[redacted]"

    /// Remembers `secret` so that every later `redacted(_:)` hides it. Secrets shorter than 4 characters are
    /// ignored: hiding them would mangle ordinary words and protect nothing.
    public static func registerSecret(_ secret: String) {
        guard secret.count >= 4 else { return }
        secrets.withLock { _ = $0.insert(secret) }
    }

    /// `text` with every registered secret replaced by `[redacted]` (longest first, so a secret that contains
    /// another is hidden whole), also in the JSON-escaped spelling a server may echo (`/` as `\/`).
    public static func redacted(_ text: String) -> String {
        let known = secrets.withLock { $0 }
        guard !known.isEmpty else { return text }
        var result = text
        for secret in known.sorted(by: { $0.count > $1.count }) {
            for spelling in Set([secret, secret.replacing("/", with: "\\/")]) where result.contains(spelling) {
                result = result.replacing(spelling, with: redaction)
            }
        }
        return result
    }

    /// `text` with every control character escaped; `\n` and `\r` become a space (the log's one-line rule) or a
    /// visible `\n` / `\r`.
    public static func escaped(_ text: String, newlinesAsSpace: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        return text.unicodeScalars.map { scalar -> String in
            guard needsEscape(scalar) else { return String(scalar) }
            switch scalar {
            case "\n": return newlinesAsSpace ? " " : "\\n"
            case "\r": return newlinesAsSpace ? " " : "\\r"
            case "\t": return "\\t"
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                return scalar.value < 0x100
                    ? "\\x" + String(repeating: "0", count: 2 - hex.count) + hex : "\\u{" + hex + "}"
            }
        }.joined()
    }

    /// A transport error's description, its brackets balanced (SwiftNIO's `IOError` has one closing bracket too
    /// many).
    public static func transportError(_ error: any Error) -> String {
        "\(error)".replacing(") (errno: ", with: " (errno: ")
    }

    /// Redacted, then escaped: what every text from outside goes through before it is logged, stored or shown.
    public static func sanitized(_ text: String, newlinesAsSpace: Bool = false) -> String {
        escaped(redacted(text), newlinesAsSpace: newlinesAsSpace)
    }

    /// C0 controls, DEL, C1 controls (0x80-0x9F: 8-bit CSI among them), and the bidirectional overrides and
    /// isolates that reorder what a terminal shows ("Trojan Source").
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value)
            || (0x2066...0x2069).contains(value)
    }
}
