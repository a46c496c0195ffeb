import Testing

@testable import EventQueueRecords

/// Issue 41: the identity calls name two users, in the shapes Braze takes; anything else is refused at enqueue, with
/// the field named, so the queue never holds a call Braze would refuse.
@Suite struct IdentityCallValidationTests {
    let device = UserIdentity.alias(name: "dev-1", label: "device_id")

    @Test func theConstructorsBuildCallsThatPassAndNameBothUsers() throws {
        let calls: [(Record, UserIdentity, UserIdentity)] = [
            (.identify(externalID: "U1", device), .externalID("U1"), device),
            (.identify(externalID: "U1", .email("a@example.com")), .externalID("U1"), .email("a@example.com")),
            (.identify(externalID: "U1", .phone("+15555550100")), .externalID("U1"), .phone("+15555550100")),
            (
                .alias(externalID: "U1", name: "crm-7", label: "crm"), .externalID("U1"),
                .alias(name: "crm-7", label: "crm")
            ),
            (
                .merge(.externalID("old"), into: .email("keep@example.com")), .email("keep@example.com"),
                .externalID("old")
            ),
        ]
        for (record, user, other) in calls {
            let checked = try RecordValidator.validateIdentityCall(kind: record.kind, record.object)
            #expect(checked.user == user && checked.other == other, "\(record)")
            #expect(try RecordValidator.validate(kind: record.kind, object: record.object) == user)
            #expect(UserIdentity(filingOther: record.object, kind: record.kind) == other)
        }
        let line = try Record(
            jsonLine:
                #"{"type":"identify","external_id":"U1","identify":{"user_alias":{"alias_name":"d","alias_label":"l"}}}"#
        )
        #expect(line == .identify(externalID: "U1", .alias(name: "d", label: "l")))
    }

    @Test(arguments: [
        (Record.merge(.externalID("u"), into: .externalID("u")), "merge", "into itself"),
        (Record.identify(externalID: "U1", .externalID("U2")), "identify", "user_alias, email or phone"),
        (Record.identify(externalID: "U1", .brazeID("b")), "identify", "user_alias, email or phone"),
        (Record.alias(externalID: "", name: "n", label: "l"), "external_id", "1 to 255"),
        (Record.merge(.brazeID("b"), into: .externalID("u")), "merge.braze_id", "cannot be merged"),
        (Record.identify(externalID: "U1", .email("not-an-email")), "identify.email", "email address"),
        (Record(kind: .identify, object: ["external_id": "U1"]), "identify", "is required"),
        (Record(kind: .merge, object: ["merge": ["external_id": "u"]]), "record", "must name a user"),
        (
            Record(
                kind: .merge, object: ["external_id": "u", "merge": ["external_id": "v", "email": "a@example.com"]]),
            "merge.record", "more than one user"
        ),
        (
            Record(
                kind: .alias,
                object: ["email": "a@example.com", "alias": ["user_alias": ["alias_name": "n", "alias_label": "l"]]]),
            "email", "give external_id"
        ),
        (
            Record(kind: .merge, object: ["external_id": "u", "merge": ["external_id": "v"], "time": "x"]), "time",
            "not a field"
        ),
    ])
    func badCallsAreRefusedNamingTheField(record: Record, field: String, rule: String) {
        #expect {
            _ = try RecordValidator.validate(kind: record.kind, object: record.object)
        } throws: { error in
            guard let error = error as? ValidationError else { return false }
            return error.field == field && error.rule.contains(rule)
        }
    }
}
