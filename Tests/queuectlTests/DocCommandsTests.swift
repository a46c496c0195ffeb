import Foundation
import Testing
import EventQueueTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Every shell command shown in README.md and docs/OPERATING.md runs, as a reader would type it, against the built
/// binaries: each ```` ```sh ```` or ```` ```console ```` block is one bash script (`set -e`: the first command
/// that fails fails the test, named with its status and output) in a scratch directory that stands in for the
/// machine. The system paths `/var/lib/eventqueue`, `/run/eventqueue` and `/var/log/eventqueue` are mapped into
/// it, `$HOME` is in it (holding a dummy `braze-rest-key`), `EVENTQUEUE_DB`/`EVENTQUEUE_SOCKET` name the mapped
/// system queue and socket, and `.build/debug/` is the tests' own build. A `queued … --sink …` line starts the
/// daemon in the background (stopping the one before) and waits until its socket answers; `pidof queued` names
/// that daemon; a block that launches (`queuectl drain` without `--local`, `pidof`, `--unix-socket`) without
/// starting one gets `queued --sink jsonl:FILE` first. At the end of a block every daemon it started must stop
/// cleanly on SIGTERM (exit 0).
///
/// A block that cannot run here carries a comment right above it:
/// - `<!-- not-run: WHY; exercised by SCRIPT -->` (root, apt, systemd, a release build): each of its commands
///   (program, and subcommand when it has one) must appear in SCRIPT, which must exist;
/// - `<!-- quick-start: ... -->` (README): `scripts/run` and `scripts/test`, which build with SwiftPM and so
///   cannot run inside `swift test`: the test starts `queued` with the arguments `scripts/run` execs, runs the
///   README's next block against it and checks the record reaches the daemon's stdout; it also checks that
///   `.ci/run` runs `scripts/test`.
/// Commands that need root or systemd (`sudo`, `systemctl`, `journalctl`, `apt`) in an unmarked block fail the
/// test.
@Suite(.serialized) struct DocCommandsTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// A fenced block of shell commands in a Markdown file.
    struct Block: CustomStringConvertible {
        var file: String
        var line: Int
        /// The HTML comment on the line above the fence, if any.
        var marker: String?
        var body: [String]
        var language: String

        var description: String { "\(file):\(line)" }

        /// The commands, continuation lines joined, comments and a console block's output left out.
        var commands: [String] {
            var result: [String] = []
            var pending: String?
            for raw in body {
                var line = raw
                if pending == nil {
                    if language == "console" {
                        guard line.hasPrefix("$ ") else { continue }
                        line.removeFirst(2)
                    }
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                }
                let joined = (pending.map { $0 + "\n" } ?? "") + line
                if line.hasSuffix("\\") { pending = joined } else { result.append(joined); pending = nil }
            }
            if let pending { result.append(pending) }
            return result
        }

        var notRun: (why: String, script: String)? {
            guard let marker, marker.hasPrefix("<!-- not-run:"), marker.hasSuffix("-->") else { return nil }
            let inner = marker.dropFirst("<!-- not-run:".count).dropLast(3).trimmingCharacters(in: .whitespaces)
            guard let range = inner.range(of: "; exercised by ") else { return (inner, "") }
            return (
                String(inner[..<range.lowerBound]),
                inner[range.upperBound...].trimmingCharacters(in: .whitespaces)
            )
        }

        var isQuickStart: Bool { marker?.hasPrefix("<!-- quick-start:") ?? false }
    }

    static func blocks(in relativePath: String) throws -> [Block] {
        let text = try String(contentsOfFile: repository + "/" + relativePath, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            guard line.hasPrefix("```") else {
                index += 1
                continue
            }
            let language = String(line.dropFirst(3)).trimmingCharacters(in: .whitespaces)
            var end = index + 1
            while end < lines.count && !lines[end].hasPrefix("```") { end += 1 }
            if ["sh", "console", "bash", "shell"].contains(language) {
                let above = index > 0 ? lines[index - 1].trimmingCharacters(in: .whitespaces) : ""
                blocks.append(
                    Block(
                        file: relativePath, line: index + 1, marker: above.hasPrefix("<!--") ? above : nil,
                        body: Array(lines[(index + 1)..<min(end, lines.count)]),
                        language: language == "bash" || language == "shell" ? "sh" : language))
            }
            index = end + 1
        }
        return blocks
    }

    /// The program of a command and its subcommand when it has one (`systemctl stop`), without `sudo` or
    /// leading variable assignments.
    static func programAndSubcommand(_ command: String) -> (String, String?) {
        var words = command.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        while let first = words.first, first == "sudo" || (first.contains("=") && !first.hasPrefix("-")) {
            words.removeFirst()
        }
        let program = words.first ?? ""
        let second = words.dropFirst().first
        let isSubcommand =
            second.map { !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0 == "-" } && !$0.hasPrefix("-") } ?? false
        return (program, isSubcommand ? second : nil)
    }

    static let privileged: Set<String> = ["sudo", "systemctl", "journalctl", "apt", "apt-get", "dpkg", "usermod"]

    /// The machine a block runs on: a scratch directory with the system paths mapped into it.
    struct Machine {
        let scratch = Scratch()
        var root: String { scratch.file("root") }
        var home: String { scratch.file("home") }
        var db: String { root + "/var/lib/eventqueue/queue.db" }
        var socket: String { root + "/run/eventqueue/control.sock" }

        init() throws {
            for directory in ["/var/lib/eventqueue", "/run/eventqueue", "/var/log/eventqueue"] {
                try FileManager.default.createDirectory(
                    atPath: root + directory, withIntermediateDirectories: true)
            }
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let key = home + "/braze-rest-key"
            _ = FileManager.default.createFile(
                atPath: key, contents: Data("doc-test-not-a-real-key".utf8), attributes: [.posixPermissions: 0o600])
            try FileManager.default.copyItem(
                atPath: DocCommandsTests.repository + "/Tests/Fixtures/legacy/store.xml", toPath: home + "/store.plist")
        }

        /// The command as it runs here: system paths mapped, `.build/debug/` the tests' build, a daemon start in
        /// the background.
        func rewrite(_ command: String) -> String {
            var text = command
            for directory in ["/var/lib/eventqueue", "/run/eventqueue", "/var/log/eventqueue"] {
                text = text.replacingOccurrences(of: directory, with: root + directory)
            }
            text = text.replacingOccurrences(of: ".build/debug/", with: Products.directory.path + "/")
            let (program, _) = DocCommandsTests.programAndSubcommand(text)
            if program == "queued" && text.contains("--sink") {
                text = "__queued " + text.drop { $0 == " " }.dropFirst("queued ".count)
            }
            return text
        }

        static let prelude = #"""
            set -eE -o pipefail
            trap 'status=$?; echo "doc command failed with exit $status: $BASH_COMMAND" >&2; exit $status' ERR
            pidof() { tail -n 1 "$EQ_PIDS"; }
            __stop_queued() {
                local pid status
                for pid in $(cat "$EQ_PIDS" 2>/dev/null); do
                    kill -TERM "$pid" 2>/dev/null || true
                    status=0
                    wait "$pid" || status=$?
                    if [ "$status" -ne 0 ]; then echo "queued (pid $pid) exited $status on SIGTERM" >&2; return 1; fi
                done
                : >"$EQ_PIDS"
            }
            __queued() {
                __stop_queued
                queued "$@" >>"$EQ_OUT" 2>>"$EQ_ERR" &
                local pid=$! status=0
                echo "$pid" >"$EQ_PIDS"
                for _ in $(seq 200); do
                    if ! kill -0 "$pid" 2>/dev/null; then
                        wait "$pid" || status=$?
                        : >"$EQ_PIDS"
                        echo "queued $* exited $status at start: $(tail -n 5 "$EQ_ERR")" >&2
                        return 1
                    fi
                    if curl -sf --unix-socket "$EVENTQUEUE_SOCKET" http://localhost/status >/dev/null 2>&1; then
                        return 0
                    fi
                    sleep 0.05
                done
                echo "queued $* did not answer on $EVENTQUEUE_SOCKET within 10 s" >&2
                return 1
            }
            trap '__stop_queued' EXIT

            """#

        /// Runs the commands as one bash script; `daemon` are `queued` arguments to start with first.
        func run(_ commands: [String], daemon: [String]?, name: String) async throws -> ProcessResult {
            let pids = scratch.file("queued.pids")
            _ = FileManager.default.createFile(atPath: pids, contents: nil)
            var script = Self.prelude
            if let daemon { script += "__queued " + daemon.map { "'\($0)'" }.joined(separator: " ") + "\n" }
            for command in commands { script += rewrite(command) + "\n" }
            script += "__stop_queued\n"
            let path = scratch.file("block-\(name).sh")
            try script.write(toFile: path, atomically: true, encoding: .utf8)
            let environment = [
                "HOME": home, "PWD": home,
                "PATH": Products.directory.path + ":"
                    + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
                "EVENTQUEUE_DB": db, "EVENTQUEUE_SOCKET": socket,
                "EVENTQUEUE_CONFIG": scratch.file("no-system-configuration.conf"),
                "XDG_STATE_HOME": scratch.file("state"), "XDG_RUNTIME_DIR": scratch.file("runtime"),
                "TMPDIR": scratch.path,
                "EQ_PIDS": pids, "EQ_OUT": scratch.file("queued.out"), "EQ_ERR": scratch.file("queued.err"),
            ]
            // What a systemd service or another test run would have set must not reach the commands.
            let unset = ["STATE_DIRECTORY", "RUNTIME_DIRECTORY", "CREDENTIALS_DIRECTORY", "BRAZE_API_KEY"]
                .flatMap { ["-u", $0] }
            let result = try await EventQueueTestSupport.run(
                "/usr/bin/env", unset + ["/bin/bash", "-c", "cd \"$HOME\" && . \"$0\"", path],
                environment: environment,
                timeout: .seconds(60), in: scratch)
            // A script killed at its timeout leaves its daemons behind: stop exactly those.
            let leftover = (try? String(contentsOfFile: pids, encoding: .utf8)) ?? ""
            for pid in leftover.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
            return result
        }

        var daemonStdout: String { (try? String(contentsOfFile: scratch.file("queued.out"), encoding: .utf8)) ?? "" }
    }

    /// Runs every block of a file in order on one machine (later blocks see what earlier ones enqueued).
    static func runBlocks(of file: String) async throws {
        let blocks = try Self.blocks(in: file)
        #expect(!blocks.isEmpty, "no shell blocks in \(file)")
        let machine = try Machine()
        var quickStartDaemon: [String]?
        for (number, block) in blocks.enumerated() {
            if let notRun = block.notRun {
                try Self.checkNotRun(block, why: notRun.why, script: notRun.script)
                continue
            }
            if block.isQuickStart {
                quickStartDaemon = try Self.checkQuickStart(block)
                continue
            }
            // Never run here: as root in CI, `sudo systemctl …` would act on the machine itself.
            let privileged = block.commands.filter {
                Self.privileged.contains(Self.programAndSubcommand($0).0) || $0.contains("sudo ")
            }
            if !privileged.isEmpty {
                Issue.record(
                    "\(block): \(privileged) need root or systemd: mark the block <!-- not-run: WHY; exercised by SCRIPT -->"
                )
                continue
            }
            let commands = block.commands
            let startsDaemon = commands.contains {
                Self.programAndSubcommand($0).0 == "queued" && $0.contains("--sink")
            }
            let launches = commands.contains {
                ($0.contains("queuectl drain") && !$0.contains("--local")) || $0.contains("pidof")
                    || $0.contains("--unix-socket")
            }
            var daemon: [String]?
            if let quickStart = quickStartDaemon {
                daemon = quickStart
            } else if launches && !startsDaemon {
                daemon = ["--sink", "jsonl:" + machine.scratch.file("delivered-by-test-daemon.jsonl")]
            }
            let before = machine.daemonStdout.count
            let result = try await machine.run(commands, daemon: daemon, name: "\(number)")
            #expect(
                result.status == 0,
                "\(block): exit \(result.status)\(result.timedOut ? " (killed at the timeout)" : "")\nstderr: \(result.stderr.suffix(1500))\nstdout: \(result.stdout.suffix(500))"
            )
            if quickStartDaemon != nil {
                // The README: "the record appears on the daemon's stdout".
                let delivered = machine.daemonStdout.dropFirst(before).split(separator: "\n")
                    .filter { $0.hasPrefix("{\"id\":") }
                #expect(delivered.count == 1, "\(block): daemon stdout \(machine.daemonStdout)")
                #expect(delivered.first?.contains("\"name\":\"song_liked\"") ?? false)
                quickStartDaemon = nil
            }
        }
        #expect(quickStartDaemon == nil, "\(file): a quick-start block with no block after it")
    }

    static func checkNotRun(_ block: Block, why: String, script: String) throws {
        #expect(!why.isEmpty, "\(block): a not-run marker says why")
        #expect(!script.isEmpty, "\(block): a not-run marker names the script that runs its commands")
        guard !script.isEmpty else { return }
        let path = repository + "/" + script
        let text = try #require(
            try? String(contentsOfFile: path, encoding: .utf8), "\(block): no script \(script)")
        #expect(!block.commands.isEmpty, "\(block): an empty block")
        for command in block.commands {
            let (program, subcommand) = Self.programAndSubcommand(command)
            let runsProgram = text.contains(program)
            #expect(runsProgram, "\(block): \(script) never runs `\(program)` (\(command))")
            if let subcommand {
                let runsSubcommand = text.contains(program + " " + subcommand)
                #expect(runsSubcommand, "\(block): \(script) never runs `\(program) \(subcommand)` (\(command))")
            }
        }
    }

    /// The quick start's two commands: `scripts/run` (whose daemon this returns: the arguments it execs `queued`
    /// with) and the test command, `scripts/test`, which `.ci/run` runs.
    static func checkQuickStart(_ block: Block) throws -> [String] {
        let commands = block.commands.map { $0.split(separator: "#")[0].trimmingCharacters(in: .whitespaces) }
        #expect(commands == ["scripts/run", "scripts/test"], "\(block): the quick start's two commands")
        let ci = try String(contentsOfFile: repository + "/.ci/run", encoding: .utf8)
        #expect(
            ci.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "scripts/test" },
            ".ci/run runs the README's test command")
        let run = try String(contentsOfFile: repository + "/scripts/run", encoding: .utf8)
        let exec = try #require(
            run.split(separator: "\n").last { $0.hasPrefix("exec \"$bin/queued\"") }, "scripts/run execs queued")
        let arguments = exec.split(separator: " ").dropFirst(2).map(String.init).filter { $0 != "\"$@\"" }
        #expect(arguments.contains("--sink"), "scripts/run: \(exec)")
        return arguments
    }

    @Test func everyCommandOfTheReadmeRuns() async throws {
        try await Self.runBlocks(of: "README.md")
    }

    @Test func everyCommandOfOperatingRuns() async throws {
        try await Self.runBlocks(of: "docs/OPERATING.md")
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().compactMap { character -> Character? in
                if character == " " { return "-" }
                if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    return character
                }
                return nil
            })
    }

    static func anchors(of path: String) throws -> Set<String> {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var inFence = false
        var result: Set<String> = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("```") { inFence.toggle() }
            guard !inFence, line.hasPrefix("#") else { continue }
            result.insert(anchor(line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)))
        }
        return result
    }

    /// Every relative link of README.md and docs/*.md names a file or directory of the repository, and a
    /// `#fragment` into a Markdown file names one of its headings.
    @Test func everyRelativeLinkResolves() throws {
        let docs = try FileManager.default.contentsOfDirectory(atPath: Self.repository + "/docs")
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        let pattern = try Regex(#"\]\(([^)\s]+)\)"#)
        var checked = 0
        for file in ["README.md", "CHANGELOG.md"] + docs.sorted() {
            let text = try String(contentsOfFile: Self.repository + "/" + file, encoding: .utf8)
            let directory = URL(fileURLWithPath: Self.repository + "/" + file).deletingLastPathComponent()
            for match in text.matches(of: pattern) {
                guard let target = match.output[1].substring.map(String.init) else { continue }
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let pathPart = String(parts[0])
                let resolved =
                    pathPart.isEmpty
                    ? URL(fileURLWithPath: Self.repository + "/" + file)
                    : directory.appendingPathComponent(pathPart).standardizedFileURL
                checked += 1
                #expect(
                    FileManager.default.fileExists(atPath: resolved.path), "\(file): broken link \(target)")
                if parts.count == 2, resolved.path.hasSuffix(".md"),
                    FileManager.default.fileExists(atPath: resolved.path)
                {
                    let anchors = try Self.anchors(of: resolved.path)
                    #expect(anchors.contains(String(parts[1])), "\(file): no heading for \(target)")
                }
            }
        }
        #expect(checked > 20)
    }
}
