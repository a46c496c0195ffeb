import Foundation

/// The admin endpoints, for driving a `fake-braze` process from another process (benchmarks, integration
/// tests). They need no key: the fake binds to 127.0.0.1 only.
extension FakeBrazeCore {
    /// Answers `POST /_faults`, `GET /_received`, `GET /_deletions`, `GET /_timeline`, `POST /_reset` and
    /// `GET /_stats`; `nil` for other paths.
    func admin(method: String, path: String, body: Data) -> FakeBrazeAction? {
        switch (method, path) {
        case ("POST", "/_faults"):
            do {
                setFaults(try JSONDecoder().decode(FakeBrazeFaults.self, from: body))
                return Self.message(200, "faults set", [])
            } catch {
                return Self.message(400, "invalid faults: \(error)", [])
            }
        case ("GET", "/_received"):
            var lines: [UInt8] = []
            for object in received() {
                let head = Self.json([
                    "request": object.request, "array": object.array, "index": object.index,
                    "accepted": object.accepted,
                ])
                // The object is JSON already: splice it in as the last member.
                lines.append(contentsOf: head.dropLast())
                lines.append(contentsOf: ",\"object\":".utf8)
                lines.append(contentsOf: object.json.utf8)
                lines.append(contentsOf: "}\n".utf8)
            }
            return FakeBrazeAction(status: 200, headers: [("Content-Type", "application/x-ndjson")], body: lines)
        case ("GET", "/_deletions"):
            let lines = deletions().flatMap { deletion in
                Self.json(["request": deletion.request, "type": deletion.type, "identifiers": deletion.identifiers])
                    + Array("\n".utf8)
            }
            return FakeBrazeAction(status: 200, headers: [("Content-Type", "application/x-ndjson")], body: lines)
        case ("GET", "/_timeline"):
            let lines = timeline().flatMap { event in
                var object: [String: Any] = [
                    "sequence": event.sequence, "endpoint": event.endpoint, "request": event.request,
                    "phase": event.phase.rawValue, "users": event.users,
                ]
                if let status = event.status { object["status"] = status }
                return Self.json(object) + Array("\n".utf8)
            }
            return FakeBrazeAction(status: 200, headers: [("Content-Type", "application/x-ndjson")], body: lines)
        case ("POST", "/_reset"):
            reset()
            return Self.message(200, "reset", [])
        case ("GET", "/_stats"):
            let stats = stats()
            let byStatus = Dictionary(uniqueKeysWithValues: stats.byStatus.map { ("\($0.key)", $0.value) })
            return FakeBrazeAction(
                status: 200, headers: [("Content-Type", "application/json")],
                body: Self.json([
                    "requests": stats.requests, "by_status": byStatus, "dropped": stats.dropped, "hung": stats.hung,
                    "reset_mid_response": stats.resetMidResponse, "objects_received": stats.objectsReceived,
                    "user_overlaps": stats.userOverlaps, "max_in_flight": stats.maxInFlight,
                    "max_requests_in_one_second": stats.maxRequestsInOneSecond,
                ]))
        default:
            return nil
        }
    }
}
