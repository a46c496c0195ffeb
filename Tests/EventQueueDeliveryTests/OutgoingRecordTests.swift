import EventQueue
import Testing

@testable import EventQueueDelivery

@Suite struct OutgoingRecordTests {
    /// 2023-11-14T22:13:20.123Z
    static let createdAt: Int64 = 1_700_000_000_123

    func claimed(_ payload: String, kind: RecordKind = .event, attempts: Int = 0) -> ClaimedRecord {
        ClaimedRecord(
            id: 42, kind: kind, payload: payload, userKey: "external_id:u1", createdAtMilliseconds: Self.createdAt,
            attempts: attempts)
    }

    func prepared(_ claimed: ClaimedRecord) throws -> OutgoingRecord {
        try OutgoingRecord.prepare(claimed).get()
    }

    func failure(_ claimed: ClaimedRecord) -> ValidationError? {
        guard case .failure(let error) = OutgoingRecord.prepare(claimed) else { return nil }
        return error
    }

    @Test func aValidRecordIsPassedThroughUnchanged() throws {
        let payload = #"{"external_id":"u1","name":"played","time":"2026-01-02T03:04:05.678Z","properties":{"n":1}}"#
        let record = try prepared(claimed(payload, attempts: 3))
        #expect(record.id == 42)
        #expect(record.kind == .event)
        #expect(record.userKey == "external_id:u1")
        #expect(record.createdAtMilliseconds == Self.createdAt)
        #expect(record.attempts == 3)
        #expect(record.object.serialized == payload, "members, order and time kept byte for byte")
    }

    @Test(arguments: [RecordKind.event, .purchase])
    func aMissingTimeIsTheEnqueueTime(kind: RecordKind) throws {
        let payload =
            kind == .event
            ? #"{"external_id":"u1","name":"played"}"#
            : #"{"external_id":"u1","product_id":"sku","currency":"EUR","price":1}"#
        let record = try prepared(claimed(payload, kind: kind))
        #expect(record.object["time"] == .string("2023-11-14T22:13:20.123Z"))
        #expect(record.object.keys.last == "time", "appended after the writer's members")
        #expect(record.object.count == (kind == .event ? 3 : 5))
    }

    @Test func attributesGetNoTime() throws {
        let payload = #"{"external_id":"u1","country":"FR"}"#
        let record = try prepared(claimed(payload, kind: .attribute))
        #expect(record.object["time"] == nil)
        #expect(record.object.serialized == payload)
    }

    @Test func theStoredPayloadIsSentAsItIsUnlessSomethingWasFilledIn() throws {
        // A foreign writer's spelling (spaces, an escape) reads as the same object: its bytes are what is sent.
        let spelled = #"{ "external_id": "u1", "name": "pl\u0061yed", "time": "2026-01-02T03:04:05.678Z" }"#
        let kept = try prepared(claimed(spelled))
        #expect(kept.storedJSON == spelled)
        var bytes: [UInt8] = []
        kept.serializeObject(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == spelled)
        // A filled-in time is not in the payload: the object is serialized.
        let filled = try prepared(claimed(#"{"external_id":"u1","name":"played"}"#))
        #expect(filled.storedJSON == nil)
        bytes = []
        filled.serializeObject(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == filled.object.serialized)
        // Setting the object drops the stored spelling, so what is sent is never stale.
        var changed = kept
        changed.object["name"] = .string("other")
        #expect(changed.storedJSON == nil)
        bytes = []
        changed.serializeObject(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""name":"other""#))
    }

    @Test func payloadThatIsNotJSONIsRefused() throws {
        let error = try #require(failure(claimed(#"{"external_id":"u1","name":"#)))
        #expect(error.field == "payload")
        #expect(error.rule.hasPrefix("is not valid JSON"))
    }

    @Test func payloadThatIsNotAnObjectIsRefused() throws {
        let error = try #require(failure(claimed(#"["external_id","u1"]"#)))
        #expect(error.field == "payload")
        #expect(error.rule == "must be a JSON object")
    }

    @Test func brazeRulesAreCheckedAgain() throws {
        let emptyName = try #require(failure(claimed(#"{"external_id":"u1","name":""}"#)))
        #expect(emptyName.field == "name")
        let dollar = try #require(failure(claimed(#"{"external_id":"u1","name":"x","properties":{"$bad":1}}"#)))
        #expect(dollar.field == "properties.$bad")
        let badTime = try #require(failure(claimed(#"{"external_id":"u1","name":"x","time":"yesterday"}"#)))
        #expect(badTime.field == "time")
        let noUser = try #require(failure(claimed(#"{"name":"x"}"#)))
        #expect(!noUser.description.isEmpty)
        #expect(noUser.description.hasPrefix("invalid record:"))
    }
}
