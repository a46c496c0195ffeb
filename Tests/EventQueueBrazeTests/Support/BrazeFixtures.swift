import EventQueue
import EventQueueDelivery
import Foundation
import Logging

@testable import EventQueueBraze
@testable import FakeBraze

/// The key every test server expects; long and distinctive so a leak is easy to find in captured text.
let testKey = "sk-test-7f3a9c1e-SECRET-KEY-4b2d"

let fixedTime = "2024-05-01T12:00:00.000Z"

func outgoing(_ record: Record, id: Int64) -> OutgoingRecord {
    let user = ["external_id", "braze_id", "email", "phone"].lazy.compactMap { key in
        record.object[key]?.stringValue.map { key + ":" + $0 }
    }.first
    return OutgoingRecord(
        id: id, kind: record.kind, object: record.object, userKey: user ?? "unknown", createdAtMilliseconds: 0,
        attempts: 0)
}

func event(_ id: Int64, user: String, name: String = "played", properties: JSONObject = [:]) -> OutgoingRecord {
    outgoing(.event(name, user: .externalID(user), properties: properties, time: fixedTime), id: id)
}

func attribute(_ id: Int64, user: String) -> OutgoingRecord {
    outgoing(.attribute("level", .number(JSONNumber(Int(id))), user: .externalID(user)), id: id)
}

func purchase(_ id: Int64, user: String) -> OutgoingRecord {
    outgoing(
        .purchase(
            productID: "gem-pack", currency: "USD", price: JSONNumber(text: "4.99") ?? JSONNumber(5),
            user: .externalID(user), time: fixedTime),
        id: id)
}

/// An attribute record of about 90 KB: a nested custom attribute of 360 strings of 250 characters (each within
/// Braze's 255), for requests near the 4 MB body limit.
func bulkyAttribute(_ id: Int64, user: String) -> OutgoingRecord {
    var nested: JSONObject = [:]
    for index in 0..<360 { nested["k\(index)"] = .string(String(repeating: "x", count: 250)) }
    var object: JSONObject = ["external_id": .string(user)]
    object["profile"] = .object(nested)
    return OutgoingRecord(
        id: id, kind: .attribute, object: object, userKey: "external_id:" + user, createdAtMilliseconds: 0, attempts: 0)
}

/// `count` events of distinct users, ids 1...count.
func distinctEvents(_ count: Int) -> [OutgoingRecord] {
    (1...count).map { event(Int64($0), user: "user-\($0)") }
}

/// An object's JSON in the fake's canonical form (sorted keys, via `JSONSerialization`), to compare what the
/// sink sent with what the fake received independently of member order and number spelling.
func canonical(_ object: JSONObject) -> String {
    guard let parsed = try? JSONSerialization.jsonObject(with: Data(object.serialized.utf8)) else { return "" }
    return FakeBrazeContract.canonical(parsed)
}

/// Runs `body` with a fresh fake on port 0 and a sink pointed at it; shuts both down afterwards.
func withSink<T>(
    faults: FakeBrazeFaults = .none, serverKey: String = testKey, maxObjectsPerRequest: Int? = nil,
    requestTimeout: Duration = .seconds(10), logger: Logger = quietLogger,
    _ body: (FakeBrazeServer, BrazeSink) async throws -> T
) async throws -> T {
    let server = try await FakeBrazeServer.start(apiKey: serverKey, configuration: faults)
    let sink = BrazeSink(
        baseURL: server.baseURL, apiKey: try BrazeAPIKey(testKey), maxObjectsPerRequest: maxObjectsPerRequest,
        requestTimeout: requestTimeout, logger: logger)
    do {
        let result = try await body(server, sink)
        await sink.shutdown()
        try await server.stop()
        return result
    } catch {
        await sink.shutdown()
        try? await server.stop()
        throw error
    }
}

let quietLogger = Logger(label: "eventqueue.braze.tests") { _ in SwiftLogNoOpLogHandler() }

/// Keeps every log line (message and metadata, rendered) so a test can search them.
struct CapturingLogHandler: LogHandler {
    let lines: Locked<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let error = event.error.map { " error=\($0)" } ?? ""
        let line = "\(event.level) \(event.message) \(merged.map { "\($0.key)=\($0.value)" }.sorted())\(error)"
        lines.withLock { $0.append(line) }
    }
}
