import EventQueue
import EventQueueCommandLine
import Testing

/// `POST /forget`'s query, as 1.4.0's `queuectl` wrote it and scripts may: every user is read back from its
/// percent-encoded form, and anything else is refused (a wrong reading would erase another user).
@Suite struct ForgetRequestTests {
    @Test(arguments: [
        ("external_id=u%201%26braze_delete%3Dtrue", UserIdentity.externalID("u 1&braze_delete=true"), false),
        ("braze_id=b%2F1&braze_delete=true", .brazeID("b/1"), true),
        ("email=a%2Bb%40example.com&braze_delete=1", .email("a+b@example.com"), true),
        ("phone=%2B1%20555&braze_delete=false", .phone("+1 555"), false),
        ("alias_name=n%3A1%3D%25&alias_label=%C3%A9%20crm", .alias(name: "n:1=%", label: "é crm"), false),
        ("external_id=", .externalID(""), false),
    ])
    func everyUserIsReadFromItsQuery(query: String, user: UserIdentity, brazeDelete: Bool) throws {
        let request = try ForgetRequest(parsing: query)
        #expect(request.user == user && request.brazeDelete == brazeDelete)
    }

    @Test(arguments: [
        "", "braze_delete=true", "external_id=a&email=b", "external_id=a&external_id=b", "alias_name=n",
        "external_id=%zz", "external_id=a&braze_delete=yes", "user=a", "external_id=%FF",
        "external_id=a%+f", "external_id=a%-1",
    ])
    func anythingElseIsRefused(query: String) {
        #expect(throws: ForgetRequest.Invalid.self) { try ForgetRequest(parsing: query) }
    }
}
