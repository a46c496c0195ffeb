import EventQueue
import Foundation
import Testing
import EventQueueTestSupport

/// `queuectl import-legacy` on the stores under Tests/Fixtures/legacy (written by make-stores.py): every entry
/// type, a bad entry, app settings, a second run, --dry-run, --json, and --clear-source with and without an old
/// writer changing the store at the worst moment.
@Suite struct ImportLegacyTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/legacy")

    /// A copy of a fixture store in the test's own directory (the clear tests rewrite it).
    static func copy(_ name: String, in scratch: Scratch) throws -> String {
        let target = scratch.file(name)
        try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent(name).path, toPath: target)
        chmod(target, 0o640)
        return target
    }

    static func summary(_ result: ProcessResult) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw ScratchError(message: "not a JSON object: \(result.stdout)")
        }
        return object
    }

    @Test(arguments: ["store.xml", "store.bplist", "store.json"])
    func importsEveryEntryTypeThenNothingTheSecondTime(store name: String) async throws {
        let scratch = Scratch()
        let store = try Self.copy(name, in: scratch)
        let db = scratch.queuePath
        let first = try await queuectl(
            ["import-legacy", store, "--external-id", "u1", "--time", "2026-11-20T09:00:00Z", "--json"], db: db,
            in: scratch)
        #expect(first.status == 0, "\(first.stderr)")
        let summary = try Self.summary(first)
        // 2 events + 2 attribute objects + 6 profile fields; the $total event is dead-lettered.
        #expect(summary["imported"] as? Int == 10)
        #expect(summary["dead_lettered"] as? Int == 1)
        #expect(summary["skipped"] as? Int == 2)
        #expect(summary["skipped_keys"] as? [String] == ["home_screen_type", "override_endpoint"])
        #expect(summary["unrecognized"] as? Int == 0)

        let dead = try await queuectl(["dead", "list", "--json"], db: db, in: scratch)
        let deadList = try JSONSerialization.jsonObject(with: Data(dead.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(deadList.count == 1)
        let reason = deadList.first?["last_error"] as? String ?? ""
        #expect(reason.contains("pending_custom_events[2]") && reason.contains("properties.$total"), "\(reason)")

        let second = try await queuectl(
            ["import-legacy", store, "--external-id", "u1", "--time", "2026-11-20T09:00:00Z", "--json"], db: db,
            in: scratch)
        let again = try Self.summary(second)
        #expect(again["imported"] as? Int == 0)
        #expect(again["dead_lettered"] as? Int == 0)
        #expect(again["already_queued"] as? Int == 11)

        let out = scratch.file("out.jsonl")
        let drain = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        #expect(drain.status == 0, "\(drain.stderr)")
        let delivered = try DeliveredLine.parse(file: out)
        #expect(delivered.count == 10)
        let events = delivered.filter { $0.type == "event" }.map(\.object)
        #expect(events.map { $0["name"] as? String } == ["song_liked", "app_opened"])
        #expect(events.first?["time"] as? String == "2026-11-20T09:00:00Z")
        #expect((events.first?["properties"] as? [String: Any])?["rating"] as? Int == 5)
        var profile: [String: String] = [:]
        for line in delivered where line.type == "attribute" {
            #expect(line.object["external_id"] as? String == "u1")
            for (key, value) in line.object where key != "external_id" { profile[key] = "\(value)" }
        }
        #expect(profile["email"] == "ann@example.com")
        #expect(profile["first_name"] == "Ann")
        #expect(profile["gender"] == "F")
        #expect(profile["dob"] == "1990-05-01")
        #expect(profile["country"] == "DE")
        #expect(profile["email_subscribe"] == "opted_in")
        #expect(profile["favorite_color"] == "blue")
        #expect(profile["plays"] == "12")
    }

    /// The recipe's own types, encoded by Foundation itself: what an app really wrote.
    enum UserAttribute: Codable {
        case email(String)
        case lastName(String)
        case dateOfBirth(Date)
        case pushSubscriptionState(Subscription)
        case favoriteTeam(String)
        enum Subscription: Codable { case optedIn, subscribed, unsubscribed }
    }

    @Test func readsAStoreWrittenByFoundationWithPropertyListEncoderItems() async throws {
        let scratch = Scratch()
        let encoder = PropertyListEncoder()
        let items: [UserAttribute] = [
            .email("bob@example.com"), .lastName("Smith"), .dateOfBirth(Date(timeIntervalSince1970: 631_152_000)),
            .pushSubscriptionState(.unsubscribed), .favoriteTeam("Hearts"),
        ]
        let store: [String: Any] = [
            "pending_user_attributes": try items.map { try encoder.encode($0) },
            "pending_custom_events": [["event_name": "opened", "at": Date(timeIntervalSince1970: 0)]],
        ]
        let path = scratch.file("suite.plist")
        try PropertyListSerialization.data(fromPropertyList: store, format: .binary, options: 0)
            .write(to: URL(fileURLWithPath: path))
        let db = scratch.queuePath
        let result = try await queuectl(["import-legacy", path, "--braze-id", "b1", "--json"], db: db, in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try Self.summary(result)
        #expect(summary["format"] as? String == "binary property list")
        #expect(summary["imported"] as? Int == 5)
        #expect(summary["dead_lettered"] as? Int == 1, "favoriteTeam is no standard field")
        let out = scratch.file("out.jsonl")
        _ = try await queuectl(["drain", "--local", "--sink", "jsonl:\(out)"], db: db, in: scratch)
        var fields: [String: String] = [:]
        for line in try DeliveredLine.parse(file: out) {
            for (key, value) in line.object where key != "braze_id" { fields[key] = "\(value)" }
        }
        #expect(fields["email"] == "bob@example.com")
        #expect(fields["last_name"] == "Smith")
        #expect(fields["dob"] == "1990-01-01")
        #expect(fields["push_subscribe"] == "unsubscribed")
        #expect(fields["properties"]?.contains("1970-01-01T00:00:00.000Z") == true, "\(fields)")
    }

    @Test func dryRunChangesNothingAndCountsTheSame() async throws {
        let scratch = Scratch()
        let store = try Self.copy("store.xml", in: scratch)
        let db = scratch.queuePath
        let before = try Data(contentsOf: URL(fileURLWithPath: store))
        let dry = try await queuectl(
            ["import-legacy", store, "--alias", "device-7:device_id", "--dry-run"], db: db, in: scratch)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.hasPrefix("would import 10 entries"), "\(dry.stdout)")
        #expect(dry.stdout.contains("dead-lettered 1"))
        #expect(!FileManager.default.fileExists(atPath: db), "a dry run without a queue creates none")
        // With a queue: the transaction is rolled back.
        try QueueWriter(path: db).close()
        let dryWithQueue = try await queuectl(
            ["import-legacy", store, "--alias", "device-7:device_id", "--dry-run", "--json"], db: db, in: scratch)
        #expect(try Self.summary(dryWithQueue)["imported"] as? Int == 10)
        let peek = try await queuectl(["peek", "--json"], db: db, in: scratch)
        #expect(peek.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == before)
    }

    /// Issue 40 #5: a dry run on a queue at a `refuse` limit says the import would be refused and changes nothing,
    /// `dropped.refused` included (before: each dry run added its entries to the count).
    @Test func aDryRunAtARefuseLimitCountsNothingRefused() async throws {
        let scratch = Scratch()
        let store = try Self.copy("store.xml", in: scratch)
        let db = scratch.queuePath
        let admin = try QueueAdmin(path: db)
        defer { admin.close() }
        try admin.recordLimits(QueueLimits(maxQueueBytes: 4096, whenFull: .refuse))
        let dry = try await queuectl(
            ["import-legacy", store, "--alias", "device-7:device_id", "--dry-run"], db: db, in: scratch)
        #expect(dry.status == 74, "\(dry.stdout) \(dry.stderr)")
        #expect(dry.stderr.contains("queue full"), "\(dry.stderr)")
        #expect(try admin.drops() == QueueDrops(), "a dry run changes nothing")
        let real = try await queuectl(["import-legacy", store, "--alias", "device-7:device_id"], db: db, in: scratch)
        #expect(real.status == 74, "\(real.stdout) \(real.stderr)")
        #expect(try admin.drops().refused > 0, "the import itself is refused and counted")
    }

    /// Each entry's outcome in a `--json` summary: entry, outcome and reason (a dry run shows no new ids).
    static func outcomes(_ result: ProcessResult) throws -> [String] {
        let entries = try Self.summary(result)["entries"] as? [[String: Any]] ?? []
        return entries.map { "\($0["entry"] ?? "?") \($0["outcome"] ?? "?") \($0["reason"] ?? "")" }
    }

    /// The dry run says what the import then does, entry by entry, with and without a queue: good entries, an
    /// entry that breaks a rule, one set aside before any check (it sets the field naming the user), and keyed
    /// entries an earlier import already queued. One entry that only a whole serialized record breaks (a
    /// custom-attribute object over 256 KiB, every field of it valid) fails the dry run as it fails the import.
    @Test func theDryRunSaysWhatTheImportDoes() async throws {
        let scratch = Scratch()
        let store = try Self.copy("store.json", in: scratch)
        // The fixture with one more custom-attribute entry, written into its text: rewritten by a JSON library,
        // its objects' keys could come in another order, and the entries already queued would be other records.
        let fixture = try String(contentsOfFile: store, encoding: .utf8)
        let lastAttribute = "\"premium\": true\n    }"
        try #require(fixture.contains(lastAttribute))
        func extended(_ name: String, adding entry: String) throws -> String {
            let path = scratch.file(name)
            try fixture.replacingOccurrences(of: lastAttribute, with: lastAttribute + ",\n    " + entry)
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        func dryRunThenImport(_ path: String, db: String) async throws -> ProcessResult {
            let arguments = ["import-legacy", path, "--external-id", "u1", "--json"]
            let dry = try await queuectl(
                arguments + ["--dry-run"], db: db, environment: ["TMPDIR": scratch.file("tmp")], in: scratch)
            let imported = try await queuectl(arguments, db: db, in: scratch)
            #expect(dry.status == imported.status, "\(dry.stderr) \(imported.stderr)")
            if imported.status == 0 {
                #expect(try Self.outcomes(dry) == Self.outcomes(imported))
            } else {
                #expect(dry.stderr == imported.stderr)
            }
            return dry
        }
        try FileManager.default.createDirectory(atPath: scratch.file("tmp"), withIntermediateDirectories: false)
        let conflicting = try extended("conflicting.json", adding: #"{"external_id": "someone-else", "plan": "pro"}"#)
        // No queue yet: the dry run creates none (and leaves no scratch queue), then the import creates it.
        let dry = try await dryRunThenImport(conflicting, db: scratch.file("new.db"))
        try #require(dry.status == 0, "\(dry.stderr)")
        #expect(try Self.summary(dry)["dead_lettered"] as? Int == 2, "\(dry.stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.file("tmp")).isEmpty)
        // A queue that holds the fixture's entries already: those are known by their keys, the new one is not.
        let keyed = scratch.file("keyed.db")
        #expect(
            try await queuectl(["import-legacy", store, "--external-id", "u1"], db: keyed, in: scratch).status == 0)
        let again = try await dryRunThenImport(conflicting, db: keyed)
        #expect(try Self.summary(again)["already_queued"] as? Int == 11, "\(again.stdout)")
        let huge =
            "{"
            + (0..<1_100).map { #""k\#($0)": ""# + String(repeating: "x", count: 250) + "\"" }
            .joined(separator: ", ") + "}"
        _ = try await dryRunThenImport(try extended("oversize.json", adding: huge), db: scratch.file("oversize.db"))
    }

    @Test(arguments: ["store.xml", "store.bplist", "store.json"])
    func clearSourceRemovesOnlyImportedEntriesKeepingFormatAndMode(store name: String) async throws {
        let scratch = Scratch()
        let store = try Self.copy(name, in: scratch)
        let db = scratch.queuePath
        let result = try await queuectl(
            ["import-legacy", store, "--external-id", "u1", "--clear-source", "--json"], db: db, in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Self.summary(result)["cleared"] as? Int == 11)
        var info = stat()
        stat(store, &info)
        #expect(info.st_mode & 0o777 == 0o640)
        let data = try Data(contentsOf: URL(fileURLWithPath: store))
        if name == "store.bplist" { #expect(data.starts(with: Array("bplist00".utf8))) }
        if name == "store.xml" { #expect(data.starts(with: Array("<?xml".utf8))) }
        let cleared: [String: Any]
        if name == "store.json" {
            cleared = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        } else {
            cleared = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] ?? [:]
        }
        #expect((cleared["pending_custom_events"] as? [Any])?.isEmpty == true)
        #expect((cleared["pending_user_attributes"] as? [Any])?.isEmpty == true)
        #expect(cleared["home_screen_type"] as? String == "grid")
        #expect(cleared["override_endpoint"] as? String == "https://sdk.example.com")
        // An entry an old writer adds after the clear, identical to a cleared one at the same position, is new.
        let module = name == "store.json" ? "json" : "plistlib"
        let mode = name == "store.json" ? "" : "b"
        let append = try await run(
            "/usr/bin/python3",
            [
                "-c",
                """
                import \(module) as m, sys; p = sys.argv[1]; d = m.load(open(p, "r\(mode)"))
                d["pending_custom_events"].append({"event_name": "song_liked", "song": "Yesterday", "rating": 5})
                m.dump(d, open(p, "w\(mode)"))
                """, store,
            ], in: scratch)
        #expect(append.status == 0, "\(append.stderr)")
        let again = try await queuectl(["import-legacy", store, "--external-id", "u1", "--json"], db: db, in: scratch)
        #expect(try Self.summary(again)["imported"] as? Int == 1)
    }

    @Test func clearingThroughASymlinkRewritesTheStoreAndKeepsTheLink() async throws {
        let scratch = Scratch()
        let store = try Self.copy("store.xml", in: scratch)
        let link = scratch.file("link.plist")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: store)
        let result = try await queuectl(
            ["import-legacy", link, "--external-id", "u1", "--clear-source"], db: scratch.queuePath, in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == store)
        let data = try Data(contentsOf: URL(fileURLWithPath: store))
        let after = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] ?? [:]
        #expect((after["pending_custom_events"] as? [Any])?.isEmpty == true)
    }

    @Test func aStoreThatChangesBeforeTheClearIsLeftAlone() async throws {
        let scratch = Scratch()
        let store = try Self.copy("store.xml", in: scratch)
        let db = scratch.queuePath
        // The seam runs after the import committed and before the store is read again: an old writer appending
        // an event there (a whole-file rewrite, as UserDefaults does) must not lose it.
        let hook = """
            python3 -c 'import plistlib,sys; p=sys.argv[1]; d=plistlib.load(open(p,"rb")); \
            d["pending_custom_events"].append({"event_name": "late"}); plistlib.dump(d, open(p,"wb"))' \(store)
            """
        let result = try await queuectl(
            ["import-legacy", store, "--external-id", "u1", "--clear-source"], db: db,
            environment: ["EVENTQUEUE_TEST_BEFORE_CLEAR": hook], in: scratch)
        #expect(result.status == 75)
        #expect(result.stderr.contains("changed since it was read") && result.stderr.contains("run the same command"))
        #expect(result.stdout.hasPrefix("imported 10 entries"), "\(result.stdout)")
        let data = try Data(contentsOf: URL(fileURLWithPath: store))
        let after = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] ?? [:]
        let events = after["pending_custom_events"] as? [[String: Any]] ?? []
        #expect(events.count == 4, "nothing removed, the late entry kept")
        #expect(events.last?["event_name"] as? String == "late")
        // Run again: the late event is imported, the others are already queued, and the clear goes through.
        let rerun = try await queuectl(
            ["import-legacy", store, "--external-id", "u1", "--clear-source", "--json"], db: db, in: scratch)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let summary = try Self.summary(rerun)
        #expect(summary["imported"] as? Int == 1)
        #expect(summary["already_queued"] as? Int == 11)
        #expect(summary["cleared"] as? Int == 12)
    }

    @Test func anEntryThatWouldChangeTheUserIsSetAside() async throws {
        let scratch = Scratch()
        let path = scratch.file("store.json")
        try Data(#"{"pending_custom_attributes": [{"external_id": "someone-else", "plan": "pro"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        let db = scratch.queuePath
        let result = try await queuectl(["import-legacy", path, "--external-id", "u1", "--json"], db: db, in: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try Self.summary(result)
        #expect(summary["imported"] as? Int == 0)
        #expect(summary["dead_lettered"] as? Int == 1)
        let dead = try await queuectl(["dead", "list", "--json"], db: db, in: scratch)
        let list = try JSONSerialization.jsonObject(with: Data(dead.stdout.utf8)) as? [[String: Any]] ?? []
        let object = list.first?["object"] as? [String: Any]
        #expect(object?["external_id"] as? String == "u1" && object?["plan"] as? String == "pro")
        #expect((list.first?["last_error"] as? String)?.contains("sets external_id") == true)
    }

    @Test func unreadableAndMalformedStoresAreRefused() async throws {
        let scratch = Scratch()
        let db = scratch.queuePath
        let missing = try await queuectl(
            ["import-legacy", scratch.file("nope.plist"), "--external-id", "u1"], db: db, in: scratch)
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("cannot read the store"))
        let garbage = scratch.file("garbage.plist")
        try Data("<plist><dict><key>x</key>".utf8).write(to: URL(fileURLWithPath: garbage))
        let malformed = try await queuectl(["import-legacy", garbage, "--external-id", "u1"], db: db, in: scratch)
        #expect(malformed.status == 65)
        #expect(malformed.stderr.contains("not a readable property list"))
        let wrongShape = scratch.file("shape.json")
        try Data(#"{"pending_custom_events": {"event_name": "x"}}"#.utf8).write(to: URL(fileURLWithPath: wrongShape))
        let shape = try await queuectl(["import-legacy", wrongShape, "--external-id", "u1"], db: db, in: scratch)
        #expect(shape.status == 65)
        #expect(shape.stderr.contains("pending_custom_events must be an array"))
        let noUser = try await queuectl(["import-legacy", wrongShape], db: db, in: scratch)
        #expect(noUser.status == 64)
    }
}
