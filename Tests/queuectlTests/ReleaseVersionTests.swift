import Foundation
import Testing
import EventQueueTestSupport

/// The release version comes from the repository itself (`VERSION`), not from tags: `scripts/embed-build-info` on
/// a throwaway git repository, and this tree's own build.
@Suite struct ReleaseVersionTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// The version `scripts/embed-build-info` embeds for the tree at `root`.
    static func embedded(_ root: String, version: String = "", in scratch: Scratch) async throws -> String {
        let out = scratch.file("generated")
        let result = try await run(
            "/bin/sh", [repository + "/scripts/embed-build-info", root, out],
            environment: ["EVENTQUEUE_VERSION": version], in: scratch)
        try #require(result.status == 0, "\(result.stderr)")
        let text = try String(contentsOfFile: out + "/EmbeddedVersion.swift", encoding: .utf8)
        return try #require(text.firstMatch(of: #/embedded = "([^"]*)"/#)).output.1.description
    }

    @discardableResult
    static func git(_ arguments: [String], in root: String, scratch: Scratch) async throws -> String {
        let result = try await run(
            "/usr/bin/git", ["-C", root, "-c", "user.name=test", "-c", "user.email=test@example.com"] + arguments,
            in: scratch)
        try #require(result.status == 0, "git \(arguments): \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func theReleaseCommitIsItsVersionAndLaterCommitsCountFromIt() async throws {
        let scratch = Scratch()
        let root = scratch.file("repository")
        try FileManager.default.createDirectory(atPath: root + "/Migrations", withIntermediateDirectories: true)
        try "1.4.0\n".write(toFile: root + "/VERSION", atomically: true, encoding: .utf8)
        try await Self.git(["init", "-q"], in: root, scratch: scratch)
        try await Self.git(["add", "VERSION"], in: root, scratch: scratch)
        try await Self.git(["commit", "-q", "-m", "Release 1.4.0"], in: root, scratch: scratch)
        #expect(try await Self.embedded(root, in: scratch) == "1.4.0")

        for message in ["one", "two"] {
            try await Self.git(["commit", "-q", "--allow-empty", "-m", message], in: root, scratch: scratch)
        }
        try await Self.git(["tag", "v9.9.9"], in: root, scratch: scratch)  // a tag changes nothing
        let head = try await Self.git(["rev-parse", "--short=12", "HEAD"], in: root, scratch: scratch)
        #expect(try await Self.embedded(root, in: scratch) == "1.4.0+dev.2.g\(head)")
        #expect(try await Self.embedded(root, version: "1.5.0~matrix", in: scratch) == "1.5.0~matrix")
    }

    @Test func thisTreeBuildsAsItsVersionFile() async throws {
        let scratch = Scratch()
        let release = try String(contentsOfFile: Self.repository + "/VERSION", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let printed = try await run(Products.queuectl, ["--version"], in: scratch).stdout
        #expect(printed == release + "\n" || printed.hasPrefix(release + "+dev."), "\(printed) for VERSION \(release)")
    }
}
