import Foundation
import Testing

@testable import EventQueue

/// The `user_key` rule has one home, the generated column of Migrations/0001_init.sql; its Swift side is
/// `UserIdentity(filing:)`. For every shape of identity a payload can have (each identifier absent, a string, or
/// another JSON type; the alias an object with its members in every state, or not an object), SQLite's column and
/// the Swift rule agree, except where the Swift rule refuses to guess (an alias member that is not a string or
/// null), and then it refuses: it never names a user the column does not.
@Suite struct UserKeyRuleTests {
    let scratch = Scratch()

    static let values: [String?] = [nil, "\"x\"", "\"\\u00e9t\\u00e9\"", "\"\"", "5", "null", "true", "{}", "[\"a\"]"]
    static let aliasMembers: [String?] = [nil, "\"n\"", "null", "7", "\"\\\"quoted\\\"\""]

    /// Every combination of the five identifiers, each with one of `values` (the alias also as objects with
    /// members from `aliasMembers`).
    static func shapes() -> [String] {
        var aliases = values
        for name in aliasMembers {
            for label in aliasMembers {
                let members = [name.map { "\"alias_name\":\($0)" }, label.map { "\"alias_label\":\($0)" }].compactMap(
                    \.self)
                aliases.append("{" + members.joined(separator: ",") + "}")
            }
        }
        var shapes: [String] = []
        for externalID in values {
            for brazeID in [nil, "\"b\"", "1"] {
                for alias in aliases {
                    for email in [nil, "\"e@example.com\"", "false"] {
                        for phone in [nil, "\"+15550100\"", "2"] {
                            let members = [
                                externalID.map { "\"external_id\":\($0)" }, brazeID.map { "\"braze_id\":\($0)" },
                                alias.map { "\"user_alias\":\($0)" }, email.map { "\"email\":\($0)" },
                                phone.map { "\"phone\":\($0)" },
                            ].compactMap(\.self)
                            shapes.append("{" + (["\"name\":\"e\""] + members).joined(separator: ",") + "}")
                        }
                    }
                }
            }
        }
        return shapes
    }

    @Test func swiftAndTheGeneratedColumnAgreeOnEveryShape() throws {
        let path = scratch.file("q.db")
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        var compared = 0
        var refusedByBoth = 0
        var refusedBySwiftOnly = 0
        try raw.execute("BEGIN")
        for (index, shape) in Self.shapes().enumerated() {
            let object = try #require(try JSONValue.parse(shape).objectValue)
            let swift = UserIdentity(filing: object)?.orderingKey
            let escaped = shape.replacingOccurrences(of: "'", with: "''")
            // The column is NOT NULL: a payload it derives no user from is refused by the INSERT itself.
            let sql: String?
            do {
                try raw.execute("INSERT INTO records (id, kind, payload) VALUES (\(index + 1), 'event', '\(escaped)')")
                sql = try raw.scalar("SELECT user_key FROM records WHERE id = \(index + 1)")
            } catch {
                sql = nil
            }
            if let swift {
                #expect(swift == sql, "\(shape): Swift files it under \(swift), SQLite under \(sql ?? "nothing")")
                compared += 1
            } else if sql == nil {
                refusedByBoth += 1
            } else {
                // Only an alias object with a member that is neither a string nor null: SQLite turns it into text.
                let alias = object["user_alias"]?.objectValue
                let members: [JSONValue?] = [alias?["alias_name"], alias?["alias_label"]]
                let guessed = members.contains { (member: JSONValue?) -> Bool in
                    guard let member else { return false }
                    return member.stringValue == nil && member != .null
                }
                let precedes = ["external_id", "braze_id"].contains { object[$0]?.stringValue != nil }
                #expect(guessed && !precedes, "\(shape): SQLite files it under \(sql ?? ""), Swift refuses")
                refusedBySwiftOnly += 1
            }
        }
        try raw.execute("ROLLBACK")
        print(
            "UserKeyRule: \(compared) shapes agreed, \(refusedByBoth) refused by both, \(refusedBySwiftOnly) refused by Swift only"
        )
        #expect(compared > 1_000 && refusedByBoth > 100)
    }

    /// Issue 41: an identity call's other user (`records.other_user_key`) follows the rule of `user_key` applied to
    /// the object under the kind's member, and Swift (`UserIdentity(filingOther:kind:)`) agrees on every shape
    /// where it names a user; an ordinary row has none, whatever it holds under such a member.
    @Test func theOtherUserOfAnIdentityCallAgreesWithSwift() throws {
        let path = scratch.file("other.db")
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        try raw.execute("BEGIN")
        var compared = 0
        for (index, shape) in Self.shapes().enumerated() where index % 7 == 0 {
            for kind in [RecordKind.identify, .alias, .merge, .event] {
                let payload = #"{"external_id":"U1",""# + kind.rawValue + #"":"# + shape + "}"
                let object = try #require(try JSONValue.parse(payload).objectValue)
                let escaped = payload.replacingOccurrences(of: "'", with: "''")
                try raw.execute("INSERT INTO records (kind, payload) VALUES ('\(kind.rawValue)', '\(escaped)')")
                let sql = try raw.scalar("SELECT other_user_key FROM records WHERE id = last_insert_rowid()")
                if let swift = UserIdentity(filingOther: object, kind: kind)?.orderingKey {
                    #expect(swift == sql, "\(kind) \(shape): Swift \(swift), SQLite \(sql ?? "nothing")")
                    compared += 1
                } else if kind == .event {
                    #expect(sql == nil, "an event names no other user: \(shape)")
                }
            }
        }
        try raw.execute("ROLLBACK")
        #expect(compared > 300)
    }

    /// The shape of issue 33: an e-mail and an alias whose label is null. The column looks at the alias first and
    /// derives nothing; the pre-check used to look at the e-mail first and let the dead letter through, so the bulk
    /// enqueue failed with exit 74 after earlier chunks committed.
    @Test func anEmailWithANullLabelAliasIsRefusedAsADeadLetterBeforeAnythingIsWritten() throws {
        let record = try Record(
            jsonLine:
                #"{"type":"event","object":{"email":"a@example.com","user_alias":{"alias_name":"n","alias_label":null},"name":"e"}}"#
        )
        #expect(UserIdentity(filing: record.object) == nil)
        #expect(throws: QueueError.self) {
            try QueueBatch.check(record, orDeadLetter: true)
        }
    }

    /// Issue 39 #1: label `a` + name `b:c` and label `a:b` + name `c` were one user (`user_alias:a:b:c`). Every
    /// (label, name) from texts with colons, the key's own separators and prefixes, hex-looking text, empty strings
    /// and Unicode now has a key of its own, and SQLite's column and Swift agree on each.
    @Test func everyAliasHasAKeyOfItsOwnAndSQLiteAgrees() throws {
        let texts = ["a", "b:c", "a:b", "c", "", ":", "::", "613A62", "user_alias", "#", "é:t", "日本:語", "x y", "?"]
        let path = scratch.file("aliases.db")
        try QueueWriter(path: path).close()
        let raw = try RawDatabase(path: path)
        var keys: [String: (label: String, name: String)] = [:]
        var id = 0
        for label in texts {
            for name in texts {
                id += 1
                let user = UserIdentity.alias(name: name, label: label)
                let payload = JSONObject(members: [user.brazeMember, .init(key: "name", value: "e")]).serialized
                try raw.execute(
                    "INSERT INTO records (id, kind, payload) VALUES (\(id), 'event', '"
                        + payload.replacingOccurrences(of: "'", with: "''") + "')")
                let sql = try raw.scalar("SELECT user_key FROM records WHERE id = \(id)")
                #expect(sql == user.orderingKey, "label \(label), name \(name)")
                if let other = keys[user.orderingKey] {
                    Issue.record("\(user.orderingKey) files both \(other) and (\(label), \(name))")
                }
                keys[user.orderingKey] = (label, name)
            }
        }
        #expect(keys.count == texts.count * texts.count)
        #expect(
            UserIdentity.alias(name: "b:c", label: "a").orderingKey == "user_alias:a:b:c",
            "colon-free labels keep their key")
        #expect(UserIdentity.alias(name: "c", label: "a:b").orderingKey == "user_alias#613A62:c")
    }

    /// Issue 39 #1 through the writer API: the second alias's record under the first's key is queued (it was
    /// refused as a reused key), and forgetting one alias leaves the other's records.
    @Test func forgettingOneAliasLeavesTheAliasThatSharedItsOldKey() throws {
        let path = scratch.file("forget-alias.db")
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        let first = UserIdentity.alias(name: "b:c", label: "a")
        let second = UserIdentity.alias(name: "c", label: "a:b")
        let one = try writer.enqueue(Record.event("played", user: first, idempotencyKey: "k"))
        let two = try writer.enqueue(Record.event("played", user: second, idempotencyKey: "k"))
        #expect(one != two)
        let report = try writer.forget([second])
        #expect(report.removed == 1)
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("SELECT group_concat(id) FROM records") == "\(one)")
    }

    /// Migration 8 on a file of schema 7: the two aliases that shared `user_alias:a:b:c` get keys of their own, every
    /// row keeps its id and values, and the AUTOINCREMENT counter is carried over (ids never repeat).
    @Test func migrationEightFilesTheAliasesOfASchemaSevenFileApart() throws {
        let path = scratch.file("seven.db")
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        try connection.execute("PRAGMA auto_vacuum = INCREMENTAL", operation: "test")
        _ = try connection.scalarText("PRAGMA journal_mode = WAL", operation: "test")
        try Migrations.migrate(connection, to: 7)
        try connection.execute(
            """
            INSERT INTO records (id, kind, payload) VALUES
                (3, 'event', '{"user_alias":{"alias_label":"a","alias_name":"b:c"},"name":"x"}'),
                (5, 'event', '{"user_alias":{"alias_label":"a:b","alias_name":"c"},"name":"x"}'),
                (9, 'attribute', '{"external_id":"u1","plan":"gold"}');
            UPDATE records SET state = 'dead', dead_at_ms = 1, last_error = 'kept' WHERE id = 9;
            DELETE FROM records WHERE id = 9 - 9;
            UPDATE sqlite_sequence SET seq = 40 WHERE name = 'records';
            """, operation: "test")
        #expect(try connection.scalarText("SELECT count(DISTINCT user_key) FROM records", operation: "test") == "2")
        connection.close()
        let admin = try QueueAdmin(path: path)
        admin.close()
        let raw = try RawDatabase(path: path)
        #expect(try raw.scalar("PRAGMA user_version") == "8")
        #expect(
            try raw.scalar("SELECT group_concat(id || '=' || user_key, ' ') FROM records")
                == "3=user_alias:a:b:c 5=user_alias#613A62:c 9=external_id:u1")
        #expect(try raw.scalar("SELECT last_error FROM records WHERE id = 9") == "kept")
        #expect(try raw.scalar("SELECT seq FROM sqlite_sequence WHERE name = 'records'") == "40")
        #expect(try raw.scalar("PRAGMA integrity_check") == "ok")
    }
}
