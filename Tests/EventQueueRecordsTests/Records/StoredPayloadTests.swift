import Testing

@testable import EventQueueRecords

/// `StoredPayload.check` is the one rule the consumer, `dead retry` and salvage apply to a payload read back from
/// the file: each kind of problem, the filled-in time, and the two spellings of each message.
struct StoredPayloadTests {
    static let created: Int64 = 1_700_000_000_000

    @Test func aValidEventWithoutTimeGetsItsEnqueueTime() throws {
        let payload = #"{"external_id":"u1","name":"song_liked"}"#
        let object = try StoredPayload.check(payload, kind: .event, createdAtMilliseconds: Self.created).get().object
        #expect(object["time"] == .string(ISO8601.format(unixMilliseconds: Self.created)))
        #expect(object["name"] == .string("song_liked"))
    }

    @Test func anAttributeGetsNoTime() throws {
        let payload = #"{"external_id":"u1","email":"a@example.com"}"#
        let object = try StoredPayload.check(payload, kind: .attribute, createdAtMilliseconds: Self.created).get()
            .object
        #expect(object["time"] == nil)
    }

    @Test func eachProblemIsNamedTheSameWayByEveryCaller() {
        func problem(_ payload: String, _ kind: RecordKind = .event) -> StoredPayload.Problem? {
            if case .failure(let problem) = StoredPayload.check(payload, kind: kind, createdAtMilliseconds: 0) {
                return problem
            }
            return nil
        }
        let notJSON = problem("{not json")
        #expect(notJSON?.description.hasPrefix("payload is not valid JSON: ") == true)
        #expect(notJSON?.validationError.field == "payload")
        #expect(notJSON?.validationError.rule.hasPrefix("is not valid JSON: ") == true)

        let array = problem("[1,2]")
        #expect(array?.description == "payload must be a JSON object")
        #expect(array?.validationError.rule == "must be a JSON object")

        // Valid JSON that breaks a rule (no user): the validator's own error, unchanged.
        let noUser = problem(#"{"name":"x"}"#)
        guard case .invalid(let error) = noUser else {
            Issue.record("a record without a user passed: \(String(describing: noUser))")
            return
        }
        #expect(noUser?.description == error.description)
        #expect(noUser?.validationError == error)
    }
}
