import Foundation
import Logging

import Testing

@testable import EventQueueBraze
@testable import FakeBraze

/// The fake enforces Braze's documented contract on its own, so the sink tests above mean something.
@Suite struct FakeBrazeContractTests {
    struct Answer {
        var status: Int
        var json: [String: Any]
        var headers: [(name: String, value: String)]

        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        var errors: [[String: Any]] { json["errors"] as? [[String: Any]] ?? [] }
        var message: String? { json["message"] as? String }
    }

    /// Sends raw requests with the sink's transport, so the headers and body are exactly what the test says.
    func withServer(
        faults: FakeBrazeFaults = .none,
        _ body: (FakeBrazeServer, (String, String, [(String, String)], String?) async throws -> Answer) async throws
            -> Void
    ) async throws {
        let server = try await FakeBrazeServer.start(apiKey: testKey, configuration: faults)
        let transport = BrazeTransport(connectTimeout: .seconds(5), requestTimeout: .seconds(10))
        let send = { (method: String, path: String, headers: [(String, String)], text: String?) in
            let response = try await transport.send(
                method: method, url: server.baseURL + path, headers: headers, body: text.map { Array($0.utf8) },
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

    let auth = [("Authorization", "Bearer " + testKey), ("Content-Type", "application/json")]

    func events(_ count: Int) -> String {
        let one = #"{"external_id":"u","name":"played","time":"2024-05-01T12:00:00Z"}"#
        return #"{"events":["# + Array(repeating: one, count: count).joined(separator: ",") + "]}"
    }

    @Test func acceptsAValidRequestLikeBraze() async throws {
        try await withServer { server, send in
            let answer = try await send("POST", "/users/track", auth, events(75))
            #expect(answer.status == 201)
            #expect(answer.message == "success")
            #expect(answer.json["events_processed"] as? Int == 75)
            #expect(answer.json["attributes_processed"] == nil)
            #expect(answer.errors.isEmpty)
            #expect(answer.header("x-ratelimit-limit") != nil)
            #expect(answer.header("x-ratelimit-remaining") != nil)
            #expect(answer.header("x-ratelimit-reset").flatMap { Int($0) } != nil)
            #expect(server.received().count == 75)
        }
    }

    @Test func refusesMoreThan75PerArrayAndTheCombinedLimit() async throws {
        var faults = FakeBrazeFaults()
        faults.maxObjectsPerRequest = 50
        try await withServer(faults: faults) { server, send in
            let tooMany = try await send("POST", "/users/track", auth, events(76))
            #expect(tooMany.status == 400)
            #expect(tooMany.message == "Max Input Length Exceeded")
            let overCombined = try await send("POST", "/users/track", auth, events(51))
            #expect(overCombined.status == 400)
            #expect(server.received().isEmpty, "nothing of a 400 is applied")
        }
    }

    @Test func refusesMissingOrWrongKeysAndWrongPaths() async throws {
        try await withServer { server, send in
            let json = [("Content-Type", "application/json")]
            let statuses = [
                try await send("POST", "/users/track", json, events(1)).status,
                try await send("POST", "/users/track", json + [("Authorization", "Bearer nope")], events(1)).status,
                try await send("POST", "/users/track", json + [("Authorization", testKey)], events(1)).status,
                try await send("GET", "/users/track", auth, nil).status,
                try await send("POST", "/users/track/", auth, events(1)).status,
                try await send("POST", "/users/export", auth, events(1)).status,
            ]
            #expect(statuses == [401, 401, 401, 404, 404, 404])
            #expect(server.stats().byStatus == [401: 3])
        }
    }

    @Test func refusesMalformedRequests() async throws {
        try await withServer { _, send in
            for body in ["{", "[]", #"{"events":{}}"#, #"{"users":[]}"#, #"{"events":[1]}"#, "{}"] {
                let answer = try await send("POST", "/users/track", auth, body)
                #expect(answer.status == 400, "body \(body)")
            }
            let text = try await send("POST", "/users/track", [auth[0], ("Content-Type", "text/plain")], events(1))
            #expect(text.status == 400)
        }
    }

    @Test func invalidObjectsArePartialSuccessWithErrors() async throws {
        let objects: [(array: String, object: String, valid: Bool)] = [
            ("events", #"{"external_id":"u","braze_id":"b","name":"x","time":"2024-05-01T12:00:00Z"}"#, false),
            ("events", #"{"name":"x","time":"2024-05-01T12:00:00Z"}"#, false),
            ("events", #"{"external_id":"u","name":"x"}"#, false),
            ("events", #"{"external_id":"u","name":"","time":"2024-05-01T12:00:00Z"}"#, false),
            ("events", #"{"external_id":"u","name":"x","time":"yesterday"}"#, false),
            ("events", #"{"external_id":"u","name":"x","time":"2024-05-01T12:00:00Z","properties":{"$p":1}}"#, false),
            ("events", #"{"external_id":"u","name":"x","time":"2024-05-01T12:00:00Z","properties":{"time":1}}"#, false),
            (
                "events",
                #"{"user_alias":{"alias_name":"n","alias_label":"l"},"name":"x","time":"2024-05-01T12:00:00+02:00"}"#,
                true
            ),
            ("events", #"{"email":"a@b.c","name":"x","time":"2024-05-01T12:00:00:123Z"}"#, true),
            (
                "purchases",
                #"{"external_id":"u","product_id":"p","currency":"usd","price":1,"time":"2024-05-01T12:00:00Z"}"#, false
            ),
            (
                "purchases",
                #"{"external_id":"u","product_id":"p","currency":"USD","price":"1","time":"2024-05-01T12:00:00Z"}"#,
                false
            ),
            (
                "purchases",
                #"{"external_id":"u","product_id":"p","currency":"USD","price":1,"quantity":101,"time":"2024-05-01T12:00:00Z"}"#,
                false
            ),
            (
                "purchases",
                #"{"external_id":"u","product_id":"p","currency":"USD","price":1.5,"quantity":2,"time":"2024-05-01T12:00:00Z"}"#,
                true
            ),
            ("attributes", #"{"external_id":"u","email":"a@b.c","phone":"+15555550100"}"#, true),
            ("attributes", #"{"external_id":"u","braze_id":"b"}"#, false),
            ("attributes", #"{"first_name":"x"}"#, false),
        ]
        let body =
            "{"
            + ["attributes", "events", "purchases"].map { array in
                "\"\(array)\":[" + objects.filter { $0.array == array }.map(\.object).joined(separator: ",") + "]"
            }.joined(separator: ",") + "}"
        try await withServer { server, send in
            let answer = try await send("POST", "/users/track", auth, body)
            #expect(answer.status == 201)
            var expected: Set<String> = []
            for array in ["attributes", "events", "purchases"] {
                for (index, entry) in objects.filter({ $0.array == array }).enumerated() where !entry.valid {
                    expected.insert("\(array)#\(index)")
                }
            }
            let named = Set(answer.errors.map { "\($0["input_array"] as? String ?? "?")#\($0["index"] as? Int ?? -1)" })
            #expect(named == expected)
            #expect(answer.errors.allSatisfy { ($0["type"] as? String)?.isEmpty == false })
            #expect(server.received().filter(\.accepted).count == objects.filter(\.valid).count)
        }
    }

    @Test func adminEndpointsDriveAnOutOfProcessFake() async throws {
        try await withServer { _, send in
            let set = try await send("POST", "/_faults", [], #"{"rateLimitNextRequests":1,"retryAfterSeconds":2}"#)
            #expect(set.status == 200)
            let limited = try await send("POST", "/users/track", auth, events(1))
            #expect(limited.status == 429)
            #expect(limited.header("retry-after") == "2")
            let accepted = try await send("POST", "/users/track", auth, events(2))
            #expect(accepted.status == 201)
            let stats = try await send("GET", "/_stats", [], nil)
            #expect(stats.json["requests"] as? Int == 2)
            #expect((stats.json["by_status"] as? [String: Int]) == ["429": 1, "201": 1])
            let reset = try await send("POST", "/_reset", [], nil)
            let afterReset = try await send("GET", "/_stats", [], nil)
            #expect(reset.status == 200)
            #expect(afterReset.json["requests"] as? Int == 0)
        }
    }

    @Test func receivedIsNDJSON() async throws {
        let server = try await FakeBrazeServer.start(apiKey: testKey)
        let transport = BrazeTransport(connectTimeout: .seconds(5), requestTimeout: .seconds(10))
        _ = try await transport.send(
            method: "POST", url: server.baseURL + "/users/track", headers: auth, body: Array(events(2).utf8),
            logger: quietLogger)
        let response = try await transport.send(
            method: "GET", url: server.baseURL + "/_received", headers: [], body: nil, logger: quietLogger)
        await transport.shutdown()
        try await server.stop()
        let lines = String(decoding: response.body, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        let first = (try? JSONSerialization.jsonObject(with: Data(lines[0].utf8))) as? [String: Any]
        #expect(first?["array"] as? String == "events")
        #expect(first?["request"] as? Int == 1)
        #expect((first?["object"] as? [String: Any])?["name"] as? String == "played")
    }
}
