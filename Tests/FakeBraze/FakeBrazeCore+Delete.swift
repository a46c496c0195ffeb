import Foundation

/// `POST /users/delete`, with Braze's contract: exactly one identifier array of at most 50 identifiers, answered
/// `202 {"deleted": n, "message": "success"}`; the users bucket it shares with the identity calls (20,000 requests
/// per minute, in the `X-RateLimit-*` headers), the key check, and its faults (`FakeBrazeFaults.deleteFailures`,
/// `deleteRejectIdentifier`, `deleteDelayMilliseconds`, which the whole bucket shares). Recorded in the timeline
/// like `/users/track`.
extension FakeBrazeCore {
    static let deletePath = "/users/delete"
    /// Braze's documented bucket for `/users/delete` and its neighbours.
    static let deleteRateLimit = 20_000
    static let deleteWindowSeconds = 60
    /// The arrays Braze takes, and the member each names a user by (for the in-flight and timeline keys).
    static let deleteArrays: [String: String] = [
        "external_ids": "external_id", "braze_ids": "braze_id", "user_aliases": "user_alias",
        "email_addresses": "email", "phone_numbers": "phone",
    ]
    static let maxDeleteIdentifiers = 50

    /// Decides the answer to `POST /users/delete`.
    func delete(authorization: String?, contentType: String?, body: Data) -> FakeBrazeAction {
        let checked = Self.checkDelete(FakeBrazeContract.parse(body))
        return usersBucket(
            path: Self.deletePath, authorization: authorization, contentType: contentType, users: checked.users,
            malformed: checked.malformed
        ) { number, faults, headers in
            if let rejected = faults.deleteRejectIdentifier, checked.identifiers.contains(rejected) {
                return Self.message(400, "fake-braze: identifier \(rejected) refused", headers)
            }
            let deletion = ReceivedDeletion(request: number, type: checked.type, identifiers: checked.identifiers)
            state.withLock { $0.deletions.append(deletion) }
            return FakeBrazeAction(
                status: 202, headers: headers,
                body: Self.json(["deleted": checked.identifiers.count, "message": "success"]))
        }
    }

    /// One request to an endpoint of the users bucket (`/users/delete`, `/users/identify`, `/users/alias/new`,
    /// `/users/merge`): one request count, rate window and list of failures to come for all of them, as Braze's
    /// shared 20,000 a minute; the key and content type checked, the body's `malformed` answered 400, else
    /// `answer`'s. Recorded in the timeline (`users`: the identities the request names) like `/users/track`.
    func usersBucket(
        path: String, authorization: String?, contentType: String?, users: [String], malformed: String?,
        answer: (_ number: Int, FakeBrazeFaults, [(String, String)]) -> FakeBrazeAction
    ) -> FakeBrazeAction {
        let (seconds, attoseconds) = (ContinuousClock.now - started).components
        let now = Double(seconds) + Double(attoseconds) / 1e18
        let epochSeconds = Int(Date().timeIntervalSince1970)
        let (number, headers, faults, failure) = state.withLock { state in
            state.deleteRequests += 1
            let window = epochSeconds / Self.deleteWindowSeconds
            if state.deleteRateWindow != window {
                state.deleteRateWindow = window
                state.deletesInRateWindow = 0
            }
            state.deletesInRateWindow += 1
            let number = state.deleteRequests
            state.inFlight.started(request: -number, users: users, at: now)
            state.timeline.record(endpoint: path, request: number, phase: .started, users: users, status: nil)
            let failure = state.deleteFailuresLeft.isEmpty ? nil : state.deleteFailuresLeft.removeFirst()
            let headers = [
                ("X-RateLimit-Limit", "\(Self.deleteRateLimit)"),
                ("X-RateLimit-Remaining", "\(max(0, Self.deleteRateLimit - state.deletesInRateWindow))"),
                ("X-RateLimit-Reset", "\((window + 1) * Self.deleteWindowSeconds)"),
            ]
            return (number, headers, state.faults, failure)
        }
        var action: FakeBrazeAction
        if authorization != "Bearer " + apiKey {
            action = Self.message(401, "Invalid API Key", headers)
        } else if let failure {
            // A 429 says when to come back, as Braze's do; the window's reset can be a minute away.
            action = Self.message(
                failure, "fake-braze: injected failure", headers + (failure == 429 ? [("Retry-After", "1")] : []))
        } else if !(contentType?.lowercased().hasPrefix("application/json") ?? false) {
            action = Self.message(400, "Content-Type must be application/json", headers)
        } else if let malformed {
            action = Self.message(400, malformed, headers)
        } else {
            action = answer(number, faults, headers)
        }
        action.request = number
        action.endpoint = path
        action.delayMilliseconds = max(0, faults.deleteDelayMilliseconds, faults.delayMilliseconds)
        state.withLock { $0.stats.byStatus[action.status, default: 0] += 1 }
        return action
    }

    /// Every deletion answered 2xx, in arrival order.
    func deletions() -> [ReceivedDeletion] { state.withLock { $0.deletions } }

    /// A delete body checked against the contract: its type and identifiers (the users, keyed as in flight), or why
    /// Braze would answer 400.
    struct CheckedDelete {
        var type = ""
        var identifiers: [String] = []
        var users: [String] = []
        var malformed: String?
    }

    static func checkDelete(_ parsed: Any?) -> CheckedDelete {
        var result = CheckedDelete()
        guard let root = parsed as? [String: Any] else {
            result.malformed = "The body must be a JSON object"
            return result
        }
        let present = root.keys.sorted()
        guard present.count == 1, let type = present.first, let field = deleteArrays[type] else {
            result.malformed =
                "Exactly one of external_ids, braze_ids, user_aliases, email_addresses or phone_numbers is required "
                + "(got \(present.joined(separator: ", ")))"
            return result
        }
        result.type = type
        guard let elements = root[type] as? [Any], !elements.isEmpty else {
            result.malformed = "'\(type)' must be a non-empty array"
            return result
        }
        guard elements.count <= maxDeleteIdentifiers else {
            result.malformed = "Max Input Length Exceeded: at most \(maxDeleteIdentifiers) identifiers per request"
            return result
        }
        for element in elements {
            if type == "user_aliases" {
                guard let alias = element as? [String: Any], alias.count == 2,
                    let name = alias["alias_name"] as? String, !name.isEmpty,
                    let label = alias["alias_label"] as? String, !label.isEmpty
                else {
                    result.malformed = "Invalid 'user_aliases': each needs non-empty 'alias_name' and 'alias_label'"
                    return result
                }
                let json = FakeBrazeContract.canonical(alias)
                result.identifiers.append(json)
                result.users.append(field + "=json:" + json)
            } else {
                guard let text = element as? String, !text.isEmpty else {
                    result.malformed = "Invalid '\(type)': each must be a non-empty string"
                    return result
                }
                result.identifiers.append(text)
                result.users.append(field + "=text:" + text)
            }
        }
        result.users = Array(Set(result.users)).sorted()
        return result
    }
}
