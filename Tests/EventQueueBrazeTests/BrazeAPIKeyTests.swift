import Foundation
import Testing

@testable import EventQueueBraze

@Suite struct BrazeAPIKeyTests {
    @Test func fileBeatsCredentialBeatsEnvironment() throws {
        let scratch = Scratch()
        let file = try scratch.writeKey("key", "  from-file\n")
        _ = try scratch.writeKey("credentials/braze-api-key", "from-credential\n")
        let environment = ["CREDENTIALS_DIRECTORY": scratch.path + "/credentials", "BRAZE_API_KEY": "from-env"]

        #expect(try BrazeAPIKey.resolve(apiKeyFile: file, environment: environment).secret == "from-file")
        #expect(try BrazeAPIKey.resolve(apiKeyFile: nil, environment: environment).secret == "from-credential")
        #expect(
            try BrazeAPIKey.resolve(apiKeyFile: nil, environment: ["BRAZE_API_KEY": " from-env "]).secret == "from-env")
        // A credentials directory without our credential falls through to the environment.
        let otherDirectory = ["CREDENTIALS_DIRECTORY": scratch.path, "BRAZE_API_KEY": "from-env"]
        #expect(try BrazeAPIKey.resolve(apiKeyFile: nil, environment: otherDirectory).secret == "from-env")
    }

    @Test func unusableSourcesAreClearErrors() throws {
        let scratch = Scratch()
        #expect(throws: BrazeConfigurationError.missingKey) {
            try BrazeAPIKey.resolve(apiKeyFile: nil, environment: [:])
        }
        let empty = try scratch.writeKey("empty", " \n\n")
        #expect(throws: BrazeConfigurationError.emptyKey(source: "--api-key-file \(empty)")) {
            try BrazeAPIKey.resolve(apiKeyFile: empty, environment: ["BRAZE_API_KEY": "ignored"])
        }
        let missing = scratch.path + "/missing"
        do {
            _ = try BrazeAPIKey.resolve(apiKeyFile: missing, environment: ["BRAZE_API_KEY": "ignored"])
            Issue.record("a missing key file must not fall back to the environment")
        } catch {
            guard case .unreadableKeyFile(let source, let reason) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(source.contains(missing))
            #expect(reason.contains("No such file"))
            #expect("\(error)".contains("check the path"))
        }
        let twoLines = try scratch.writeKey("two", "secret-one\nsecret-two\n")
        do {
            _ = try BrazeAPIKey.resolve(apiKeyFile: twoLines, environment: [:])
            Issue.record("a key with a newline inside must be refused")
        } catch {
            #expect(error == .malformedKey(source: "--api-key-file \(twoLines)"))
            #expect(!"\(error)".contains("secret-one"))
        }
        #expect(throws: BrazeConfigurationError.emptyKey(source: "$BRAZE_API_KEY")) {
            try BrazeAPIKey.resolve(apiKeyFile: nil, environment: ["BRAZE_API_KEY": ""])
        }
    }

    @Test func descriptionsAreRedacted() throws {
        let key = try BrazeAPIKey(testKey)
        var dumped = ""
        dump(key, to: &dumped)
        #expect("\(key)" == "BrazeAPIKey(redacted)")
        #expect(String(reflecting: key) == "BrazeAPIKey(redacted)")
        #expect(!dumped.contains(testKey))
        #expect(Mirror(reflecting: key).children.isEmpty)
    }
}

extension Scratch {
    /// Writes a key file (mode 0600: key files readable by others are refused, issue 13 item 4), creating its
    /// directory (`credentials/`, a systemd credentials directory) if needed; returns its path.
    func writeKey(_ name: String, _ content: String) throws -> String {
        let path = file(name)
        try FileManager.default.createDirectory(
            atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path, withIntermediateDirectories: true)
        try content.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }
}
