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
}
