import Foundation
import Testing

@testable import EventQueueBraze
@testable import FakeBraze

/// The fake's `POST /users/delete` holds Braze's contract on its own (one identifier type per request, at most 50,
/// 202 on success, the key, its own rate bucket), and its timeline orders both endpoints' requests.
@Suite struct FakeBrazeDeleteContractTests {
    struct Answer {
        var status: Int
        var json: [String: Any]
        var headers: [(name: String, value: String)]

        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
    }

    let auth = [("Authorization", "Bearer " + testKey), ("Content-Type", "application/json")]

    func withServer(
        faults: FakeBrazeFaults = .none,
        _ body: (FakeBrazeServer, (String, [(String, String)], String) async throws -> Answer) async throws -> Void
    ) async throws {
        let server = try await FakeBrazeServer.start(apiKey: testKey, configuration: faults)
        let transport = BrazeTransport(connectTimeout: .seconds(5), requestTimeout: .seconds(10))
        let send = { (path: String, headers: [(String, String)], text: String) in
            let response = try await transport.send(
                method: "POST", url: server.baseURL + path, headers: headers, body: Array(text.utf8),
                logger: quietLogger)
            let json = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
            return Answer(status: response.status, json: json, headers: response.headers)
        }
        do {
            try await body(server, send)
        } catch {
            await transport.shutdown()
            try? await server.stop()
            throw error
        }
        await transport.shutdown()
        try await server.stop()
    }

    static func ids(_ count: Int) -> String {
        #"{"external_ids":["# + (1...count).map { #""u\#($0)""# }.joined(separator: ",") + "]}"
    }

    @Test func acceptsOneTypeOfAtMostFiftyWith202() async throws {
        try await withServer { server, send in
            let answer = try await send("/users/delete", auth, Self.ids(50))
            #expect(answer.status == 202)
            #expect(answer.json["deleted"] as? Int == 50 && answer.json["message"] as? String == "success")
            #expect(answer.header("x-ratelimit-limit") == "20000")
            #expect(answer.header("x-ratelimit-remaining") == "19999")
            #expect(answer.header("x-ratelimit-reset").flatMap { Int($0) } != nil)
            #expect(server.deletions().map(\.identifiers.count) == [50])
        }
    }

    @Test func refusesWhatBrazeRefusesAndAppliesNothingOfIt() async throws {
        try await withServer { server, send in
            let refused = [
                Self.ids(51), #"{"external_ids":["a"],"email_addresses":["b@example.com"]}"#, #"{"external_ids":[]}"#,
                #"{"user_aliases":[{"alias_name":"n"}]}"#, #"{"external_ids":[""]}"#, #"{"users":["a"]}"#, "[]",
            ]
            for body in refused {
                let answer = try await send("/users/delete", auth, body)
                #expect(answer.status == 400, "\(body): \(answer.status)")
            }
            #expect(try await send("/users/delete", [("Content-Type", "application/json")], Self.ids(1)).status == 401)
            #expect(
                try await send("/users/delete", [("Authorization", "Bearer nope"), auth[1]], Self.ids(1)).status == 401)
            #expect(server.deletions().isEmpty)
        }
    }

    @Test func theTimelineOrdersBothEndpointsArrivalsAndAnswers() async throws {
        var faults = FakeBrazeFaults()
        faults.delayMilliseconds = 50
        try await withServer(faults: faults) { server, send in
            let track = #"{"attributes":[{"external_id":"u1","email":"a@example.com"}]}"#
            let tracked = try await send("/users/track", auth, track)
            let deleted = try await send("/users/delete", auth, #"{"external_ids":["u1"]}"#)
            #expect(tracked.status == 201 && deleted.status == 202)
            let timeline = server.timeline()
            #expect(timeline.map(\.endpoint) == ["/users/track", "/users/track", "/users/delete", "/users/delete"])
            #expect(timeline.map(\.phase) == [.started, .answered, .started, .answered])
            #expect(timeline.map(\.status) == [nil, 201, nil, 202])
            #expect(timeline[0].users == ["external_id=text:u1"] && timeline[2].users == ["external_id=text:u1"])
            #expect(timeline.map(\.sequence) == [1, 2, 3, 4])
            #expect(server.stats().userOverlaps == 0)
        }
    }
}
