import EventQueue
import EventQueueCommandLine
import Testing

/// `POST /forget`'s query is written by `queuectl` and read by `queued` with one type: every user survives the
/// trip, and anything else is refused (a wrong reading would erase another user).
@Suite struct ForgetRequestTests {
    @Test(arguments: [
        UserIdentity.externalID("u 1&braze_delete=true"), .brazeID("b/1"), .email("a+b@example.com"),
        .phone("+1 555"), .alias(name: "n:1=%", label: "é crm"), .externalID(""),
    ])
    func everyUserSurvivesTheQuery(user: UserIdentity) throws {
        for brazeDelete in [false, true] {
            let request = ForgetRequest(user: user, brazeDelete: brazeDelete)
            #expect(!request.query.contains(" ") && request.query.allSatisfy(\.isASCII))
            #expect(try ForgetRequest(parsing: request.query) == request)
        }
    }

    @Test(arguments: [
        "", "braze_delete=true", "external_id=a&email=b", "external_id=a&external_id=b", "alias_name=n",
        "external_id=%zz", "external_id=a&braze_delete=yes", "user=a", "external_id=%FF",
    ])
    func anythingElseIsRefused(query: String) {
        #expect(throws: ForgetRequest.Invalid.self) { try ForgetRequest(parsing: query) }
    }
}
