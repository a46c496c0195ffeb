import Testing

@testable import EventQueueDelivery

/// Text from outside is redacted and escaped before it is logged, stored or shown (issue 13, items 2 and 3).
@Suite struct ExternalTextTests {
    @Test func registeredSecretsAreRedactedInEverySpelling() {
        let secret = "sk-unit-\(UInt64.random(in: 0...UInt64.max))/tail"
        ExternalText.registerSecret(secret)
        let echoed = "Invalid key: Bearer \(secret) (and JSON-escaped: \(secret.replacing("/", with: "\\/")))"
        let redacted = ExternalText.redacted(echoed)
        #expect(!redacted.contains(secret))
        #expect(!redacted.contains(secret.replacing("/", with: "\\/")))
        #expect(redacted == "Invalid key: Bearer [redacted] (and JSON-escaped: [redacted])")
        // Too short to be a secret: never registered, never mangles ordinary words.
        ExternalText.registerSecret("abc")
        #expect(ExternalText.redacted("abc abc") == "abc abc")
    }

    @Test func everyControlCharacterIsEscaped() {
        let hostile = "a\u{1B}[2J\u{1B}]0;owned\u{07}b\u{0}c\u{7F}d\u{9B}e\u{202E}f\tg\nh\ri"
        let escaped = ExternalText.escaped(hostile)
        #expect(escaped == "a\\x1B[2J\\x1B]0;owned\\x07b\\x00c\\x7Fd\\x9Be\\u{202E}f\\tg\\nh\\ri")
        #expect(!escaped.unicodeScalars.contains(where: ExternalText.needsEscape))
        #expect(ExternalText.escaped("x\ny\rz", newlinesAsSpace: true) == "x y z")
        // Ordinary text, including non-ASCII, is unchanged.
        #expect(ExternalText.escaped("Grüße, 東京 ✓") == "Grüße, 東京 ✓")
    }

    /// Issue 42: a refused connection read "... Connection refused) (errno: 111)" (SwiftNIO's `IOError` text).
    @Test func aTransportErrorsBracketsAreBalanced() {
        struct Refused: Error, CustomStringConvertible {
            var description: String {
                "Connection errors: SingleConnectionFailure(target: [IPv4]127.0.0.1/127.0.0.1:9, error: connection "
                    + "reset (error set): Connection refused) (errno: 111))"
            }
        }
        let text = ExternalText.transportError(Refused())
        #expect(text.hasSuffix("Connection refused (errno: 111))"), "\(text)")
        #expect(text.filter { $0 == "(" }.count == text.filter { $0 == ")" }.count, "\(text)")
    }
}
