import Foundation
import PackagePlugin

/// Embeds the numbered SQL files of `Migrations/` and the release version into the target that uses this plugin,
/// so the schema has a single source (the SQL files), the built binaries carry it, and `--version` comes from the
/// `VERSION` file and the commits since it changed. The work is `scripts/embed-build-info`, which rewrites its
/// outputs only when they change.
///
/// When it runs again: SwiftPM evaluates this plugin only when it plans the build, which it does again only when the
/// manifest or the file names under a target's directory change. So `Sources/EventQueue/Migrations` is a symlink to
/// `Migrations/` (excluded from the target's sources): adding a migration changes the target's directory, so the
/// new file list is embedded. Editing a migration or `VERSION`, or committing, changes an input file of the command.
@main
struct EmbedMigrationsPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL
        let migrations = try FileManager.default.contentsOfDirectory(
            at: root.appending(path: "Migrations"), includingPropertiesForKeys: nil
        )
        .filter { $0.pathExtension == "sql" }
        .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        let script = root.appending(path: "scripts/embed-build-info")
        var environment: [String: String] = [:]
        if let version = ProcessInfo.processInfo.environment["EVENTQUEUE_VERSION"], !version.isEmpty {
            environment["EVENTQUEUE_VERSION"] = version
        }
        return [
            .buildCommand(
                displayName: "Embedding \(migrations.count) schema migrations and the release version",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [script.path, root.path, output.path],
                environment: environment,
                inputFiles: [script, root.appending(path: "VERSION")] + migrations + gitStateFiles(root),
                outputFiles: [
                    output.appending(path: "EmbeddedMigrations.swift"),
                    output.appending(path: "EmbeddedVersion.swift"),
                ]
            )
        ]
    }

    /// Files that change when HEAD moves: `HEAD` and its reflog (appended by every commit, checkout and reset).
    /// Only those that exist now (a missing input fails the build); none outside a git checkout (a source copy,
    /// the version matrix).
    private func gitStateFiles(_ root: URL) -> [URL] {
        let dotGit = root.appending(path: ".git")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dotGit.path, isDirectory: &isDirectory) else { return [] }
        var gitDirectory = dotGit
        if !isDirectory.boolValue {
            // A worktree: ".git" is a file "gitdir: PATH".
            guard let text = try? String(contentsOf: dotGit, encoding: .utf8), text.hasPrefix("gitdir: ") else {
                return []
            }
            let path = text.dropFirst("gitdir: ".count).trimmingCharacters(in: .whitespacesAndNewlines)
            gitDirectory = path.hasPrefix("/") ? URL(fileURLWithPath: path) : root.appending(path: path)
        }
        return [gitDirectory.appending(path: "HEAD"), gitDirectory.appending(path: "logs/HEAD")]
            .filter { FileManager.default.fileExists(atPath: $0.path) }
    }
}
