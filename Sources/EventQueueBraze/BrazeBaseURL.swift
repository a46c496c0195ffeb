import AsyncHTTPClient
import EventQueueDelivery
import Foundation

extension BrazeSink {
    /// Checks `baseURL` at startup, with the parser that builds the requests, so a malformed URL is a
    /// configuration error (exit 78), not a retry loop: an absolute `http(s)://` URL with a host, a port (if any)
    /// from 1 to 65535, no query or fragment, and `baseURL/users/track` a URL the HTTP client accepts. The port is
    /// checked first: SwiftNIO traps on a port above 65535.
    public static func validate(baseURL: String) throws(BrazeConfigurationError) {
        let schemes = ["https://", "http://"]
        guard let scheme = schemes.first(where: { baseURL.lowercased().hasPrefix($0) }),
            baseURL.count > scheme.count,
            !baseURL.contains(where: { $0.isWhitespace || $0 == "?" || $0 == "#" }),
            let components = URLComponents(string: baseURL), let host = components.host, !host.isEmpty,
            BrazeBaseURL.portIsValid(in: String(baseURL.dropFirst(scheme.count))),
            (try? HTTPClient.Request(url: baseURL + "/users/track")) != nil
        else { throw .invalidBaseURL(BrazeBaseURL.displayed(baseURL)) }
    }
}

/// The port check and the display form of a Braze base URL (`--sink braze:BASE_URL`): a password in it is a
/// secret, never shown (`user:[redacted]@host`).
enum BrazeBaseURL {
    /// The authority's port, when there is one, is 1 to 65535 digits-only (after `user:password@` and a bracketed
    /// IPv6 host).
    static func portIsValid(in rest: String) -> Bool {
        var authority = Substring(rest.prefix { $0 != "/" })
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            authority = authority[authority.index(after: close)...]
        }
        guard let colon = authority.lastIndex(of: ":") else { return true }
        let digits = authority[authority.index(after: colon)...]
        guard !digits.isEmpty else { return true }
        guard digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(digits) else {
            return false
        }
        return (1...65_535).contains(port)
    }

    /// `baseURL` with any password replaced by `[redacted]`; registers the password as a secret.
    static func displayed(_ baseURL: String) -> String {
        let components = URLComponents(string: baseURL)
        if let password = components?.password, !password.isEmpty {
            ExternalText.registerSecret(password)
            if let encoded = components?.percentEncodedPassword { ExternalText.registerSecret(encoded) }
        }
        // A URL that does not parse may still hold `user:password@`: hide everything between `//` and `@`.
        if components == nil, let start = baseURL.range(of: "//"),
            let at = baseURL[start.upperBound...].firstIndex(of: "@")
        {
            return String(baseURL[..<start.upperBound]) + ExternalText.redaction + String(baseURL[at...])
        }
        return ExternalText.redacted(baseURL)
    }
}
