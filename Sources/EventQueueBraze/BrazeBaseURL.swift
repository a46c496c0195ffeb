import AsyncHTTPClient
import EventQueueDelivery
import Foundation

/// The checks and the display form of a Braze base URL (`--sink braze:BASE_URL`).
///
/// The URL is parsed at start with the same parser that builds the requests, so a malformed one
/// (`http://[::1`) is a configuration error at start (exit 78), not a retry loop that dead-letters every record
/// with `invalidURL` (issue 13, item 11). A password in it is a secret: it is registered with `ExternalText` and
/// never shown (the name in logs and `/status` reads `user:[redacted]@host`).
enum BrazeBaseURL {
    /// Throws unless `baseURL` is an absolute `http(s)://` URL with a host, no query or fragment, and
    /// `baseURL/users/track` is a URL the HTTP client accepts.
    static func check(_ baseURL: String) throws(BrazeConfigurationError) {
        let schemes = ["https://", "http://"]
        guard let scheme = schemes.first(where: { baseURL.lowercased().hasPrefix($0) }),
            baseURL.count > scheme.count,
            !baseURL.contains(where: { $0.isWhitespace || $0 == "?" || $0 == "#" }),
            let components = URLComponents(string: baseURL), let host = components.host, !host.isEmpty,
            (try? HTTPClient.Request(url: baseURL + "/users/track")) != nil
        else { throw .invalidBaseURL(displayed(baseURL)) }
    }

    /// `baseURL` with any password replaced by `[redacted]`; registers the password as a secret.
    static func displayed(_ baseURL: String) -> String {
        if let password = URLComponents(string: baseURL)?.password, !password.isEmpty {
            ExternalText.registerSecret(password)
            if let encoded = URLComponents(string: baseURL)?.percentEncodedPassword {
                ExternalText.registerSecret(encoded)
            }
        }
        // A URL that does not parse may still hold `user:password@`: hide everything between `//` and `@`.
        if URLComponents(string: baseURL) == nil, let start = baseURL.range(of: "//"),
            let at = baseURL[start.upperBound...].firstIndex(of: "@")
        {
            return String(baseURL[..<start.upperBound]) + ExternalText.redaction + String(baseURL[at...])
        }
        return ExternalText.redacted(baseURL)
    }
}
