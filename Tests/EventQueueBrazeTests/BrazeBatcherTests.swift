import EventQueue
import EventQueueDelivery
import Testing

@testable import EventQueueBraze

@Suite struct BrazeBatcherTests {
    let batcher = BrazeBatcher()

    @Test func splitsAt75PerArrayAndKeepsOrder() {
        let records = distinctEvents(200)
        let requests = batcher.split(records)
        #expect(requests.map(\.count) == [75, 75, 50])
        #expect(requests.flatMap { $0 }.map(\.id) == records.map(\.id))
    }

    @Test func theLimitIsPerArraySoKindsShareARequest() {
        // 75 attributes and 75 events of 150 different users fit in one request; a 76th event does not.
        let attributes = (1...75).map { attribute(Int64($0), user: "a\($0)") }
        let events = (76...151).map { event(Int64($0), user: "e\($0)") }
        let requests = batcher.split(attributes + events)
        #expect(requests.map(\.count) == [150, 1])
        #expect(requests[0].filter { $0.kind == .event }.count == 75)
        #expect(requests[1].map(\.id) == [151])
    }

    /// Braze refuses a body over 4 MB (413, nothing applied): 75 attributes of ~90 KB each (6.8 MB) go in two
    /// requests, each body under the limit, in order.
    @Test func requestsStayUnderTheBodyLimit() {
        let records = (1...75).map { bulkyAttribute(Int64($0), user: "u\($0)") }
        let requests = batcher.split(records)
        #expect(requests.count == 2, "\(requests.map(\.count))")
        #expect(requests.flatMap { $0 }.map(\.id) == records.map(\.id))
        for request in requests {
            let bytes = BrazeRequestBody(request).bytes.count
            #expect(bytes <= BrazeBatcher.maxRequestBytes && bytes > 2_000_000, "\(bytes)")
        }
        // A record larger than a whole request goes alone (Braze refuses it, and only it).
        let small = BrazeBatcher(maxRequestBytes: 50_000).split(Array(records.prefix(3)))
        #expect(small.map(\.count) == [1, 1, 1])
    }

    @Test func combinedLimit() {
        let records = (1...120).map { index -> OutgoingRecord in
            index % 2 == 0 ? event(Int64(index), user: "u\(index)") : purchase(Int64(index), user: "u\(index)")
        }
        let requests = BrazeBatcher(maxObjectsPerRequest: 50).split(records)
        #expect(requests.map(\.count) == [50, 50, 20])
        #expect(requests.flatMap { $0 }.map(\.id) == records.map(\.id))
    }

    @Test func aUsersKindsMayOnlyGoForwardWithinARequest() {
        // attribute < event < purchase: forward (and repeats) stay together.
        let forward = [attribute(1, user: "a"), event(2, user: "a"), event(3, user: "a"), purchase(4, user: "a")]
        #expect(batcher.split(forward).map { $0.map(\.id) } == [[1, 2, 3, 4]])

        // An attribute after an event of the same user would be applied first by Braze: new request.
        let backward = [event(1, user: "a"), attribute(2, user: "a")]
        #expect(batcher.split(backward).map { $0.map(\.id) } == [[1], [2]])

        // Purchase then event of the same user, with another user's records in between.
        let mixed = [purchase(1, user: "a"), attribute(2, user: "b"), event(3, user: "a"), event(4, user: "b")]
        #expect(batcher.split(mixed).map { $0.map(\.id) } == [[1, 2], [3, 4]])

        // Other users never force a split.
        let others = [event(1, user: "a"), attribute(2, user: "b"), purchase(3, user: "c"), attribute(4, user: "d")]
        #expect(batcher.split(others).map { $0.map(\.id) } == [[1, 2, 3, 4]])
    }

    @Test func randomBatchesKeepEveryInvariant() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let count = Int.random(in: 1...400, using: &generator)
            let records = (1...count).map { index -> OutgoingRecord in
                let user = "u\(Int.random(in: 0..<12, using: &generator))"
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: return attribute(Int64(index), user: user)
                case 1: return event(Int64(index), user: user)
                default: return purchase(Int64(index), user: user)
                }
            }
            let limit: Int? = Bool.random(using: &generator) ? 50 : nil
            let requests = BrazeBatcher(maxObjectsPerRequest: limit).split(records)
            // Every record once, in id order across requests.
            #expect(requests.flatMap { $0 }.map(\.id) == records.map(\.id))
            for request in requests {
                #expect(!request.isEmpty)
                #expect(request.count <= (limit ?? Int.max))
                for kind in RecordKind.allCases {
                    #expect(request.filter { $0.kind == kind }.count <= 75)
                }
                var lastRank: [String: Int] = [:]
                for record in request {
                    let rank = BrazeBatcher.rank(record.kind)
                    #expect((lastRank[record.userKey] ?? 0) <= rank)
                    lastRank[record.userKey] = rank
                }
            }
        }
    }

    @Test func requestBodyCarriesStoredPayloadsAsTheyAreAndSizesCountThem() throws {
        let spelled = #"{ "external_id": "a", "name": "x", "time": "2026-01-02T03:04:05.678Z" }"#
        let stored = try OutgoingRecord.prepare(
            ClaimedRecord(
                id: 7, kind: .event, payload: spelled, userKey: "external_id:a", createdAtMilliseconds: 0, attempts: 0)
        )
        .get()
        let built = event(8, user: "b")
        let encoded = BrazeEncodedObjects([stored, built])
        #expect(encoded.json.keys.sorted() == [8], "only the record without a stored spelling is serialized")
        #expect(encoded.size(of: stored) == spelled.utf8.count)
        let body = BrazeRequestBody([stored, built], encoded: encoded)
        let text = String(decoding: body.bytes, as: UTF8.self)
        #expect(text == #"{"events":["# + spelled + "," + built.object.serialized + "]}")
        #expect(body.bytes == BrazeRequestBody([stored, built]).bytes, "the same bytes without the encoded objects")
    }

    @Test func requestBodyHoldsOnlyNonEmptyArraysInBrazesOrder() {
        let body = BrazeRequestBody([event(1, user: "a"), attribute(2, user: "b"), event(3, user: "c")])
        let text = String(decoding: body.bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"attributes":[{"external_id":"b""#))
        #expect(text.contains(#"],"events":[{"external_id":"a""#))
        #expect(!text.contains("purchases"))
        #expect(body.idsByArray == ["attributes": [2], "events": [1, 3]])
        #expect((try? JSONValue.parse(text))?.objectValue?.keys == ["attributes", "events"])
    }
}
