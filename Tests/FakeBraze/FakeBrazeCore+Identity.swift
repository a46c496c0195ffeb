import Foundation

/// A `/users/identify`, `/users/alias/new` or `/users/merge` request the fake answered 2xx.
public struct ReceivedIdentityCall: Sendable, Hashable {
    /// The request's number in the users bucket (shared with `/users/delete`).
    public var request: Int
    public var endpoint: String
    /// The array the items came in (`aliases_to_identify`, `user_aliases`, `merge_updates`, ...).
    public var array: String
    /// Each item as its sorted JSON.
    public var items: [String]
}

/// The identity calls, under Braze's contract: at most 50 items a request, each with the fields Braze requires;
/// `/users/identify` and `/users/alias/new` answer 201, `/users/merge` 202. They share the users bucket with
/// `/users/delete` (`usersBucket`): one rate window, one list of failures to come, the same delay.
extension FakeBrazeCore {
    /// The arrays each endpoint takes.
    static let identityArrays: [String: Set<String>] = [
        "/users/identify": ["aliases_to_identify", "emails_to_identify", "phone_numbers_to_identify"],
        "/users/alias/new": ["user_aliases"],
        "/users/merge": ["merge_updates"],
    ]

    func identityCall(path: String, authorization: String?, contentType: String?, body: Data) -> FakeBrazeAction {
        var users: [String] = []
        var items: [(array: String, json: String)] = []
        let malformed = Self.checkIdentityCall(
            path: path, FakeBrazeContract.parse(body), users: &users, items: &items)
        return usersBucket(
            path: path, authorization: authorization, contentType: contentType, users: Array(Set(users)).sorted(),
            malformed: malformed
        ) { number, _, headers in
            let call = ReceivedIdentityCall(
                request: number, endpoint: path, array: items.first?.array ?? "", items: items.map(\.json))
            state.withLock { $0.identityCalls.append(call) }
            let merge = path == "/users/merge"
            let answer: [String: Any] =
                merge ? ["message": "success"] : ["aliases_processed": items.count, "message": "success"]
            return FakeBrazeAction(status: merge ? 202 : 201, headers: headers, body: Self.json(answer))
        }
    }

    /// Every identity call answered 2xx, in arrival order.
    func identityCalls() -> [ReceivedIdentityCall] { state.withLock { $0.identityCalls } }

    /// Why Braze would answer 400, or `nil`; fills in the users the request names and its items.
    static func checkIdentityCall(
        path: String, _ parsed: Any?, users: inout [String], items: inout [(array: String, json: String)]
    ) -> String? {
        guard let root = parsed as? [String: Any], let allowed = identityArrays[path] else {
            return "The body must be a JSON object"
        }
        guard !root.isEmpty, root.keys.allSatisfy(allowed.contains) else {
            return "\(path) takes \(allowed.sorted().joined(separator: ", ")) (got \(root.keys.sorted()))"
        }
        for (array, value) in root.sorted(by: { $0.key < $1.key }) {
            guard let elements = value as? [[String: Any]], !elements.isEmpty else {
                return "'\(array)' must be a non-empty array of objects"
            }
            for element in elements {
                if let problem = checkItem(array: array, element, users: &users) { return problem }
                items.append((array, FakeBrazeContract.canonical(element)))
            }
        }
        guard items.count <= maxDeleteIdentifiers else {
            return "Max Input Length Exceeded: at most \(maxDeleteIdentifiers) items per request"
        }
        return nil
    }

    /// One item: the fields its array requires, and the identities it names added to `users`.
    private static func checkItem(array: String, _ item: [String: Any], users: inout [String]) -> String? {
        switch array {
        case "merge_updates":
            for side in ["identifier_to_merge", "identifier_to_keep"] {
                guard let identifier = item[side] as? [String: Any], let user = identity(identifier) else {
                    return "'\(side)' must name one user by external_id, user_alias, email or phone"
                }
                if (identifier["email"] != nil || identifier["phone"] != nil), identifier["prioritization"] == nil {
                    return "'\(side)': an email or phone needs 'prioritization'"
                }
                users.append(user)
            }
            return item.count == 2 ? nil : "a merge update has exactly identifier_to_merge and identifier_to_keep"
        case "user_aliases":
            guard let name = item["alias_name"] as? String, !name.isEmpty,
                let label = item["alias_label"] as? String, !label.isEmpty
            else { return "each user alias needs non-empty 'alias_name' and 'alias_label'" }
            let alias = ["alias_name": name, "alias_label": label]
            users.append("user_alias=json:" + FakeBrazeContract.canonical(alias))
            if let id = item["external_id"] as? String { users.append("external_id=text:" + id) }
            return nil
        default:
            guard let id = item["external_id"] as? String, !id.isEmpty else {
                return "'\(array)': each needs a non-empty 'external_id'"
            }
            var other = item
            other["external_id"] = nil
            other["prioritization"] = nil
            guard let user = identity(other) else { return "'\(array)': each needs the identifier to identify" }
            if array != "aliases_to_identify", item["prioritization"] == nil {
                return "'\(array)': each needs 'prioritization'"
            }
            users += ["external_id=text:" + id, user]
            return nil
        }
    }

    /// The one user `identifier` names, keyed as in the timeline (`external_id=text:u1`, `user_alias=json:...`).
    private static func identity(_ identifier: [String: Any]) -> String? {
        var found: [String] = []
        for field in ["external_id", "email", "phone"] {
            if let text = identifier[field] as? String, !text.isEmpty { found.append(field + "=text:" + text) }
        }
        if let alias = identifier["user_alias"] as? [String: Any] {
            guard let name = alias["alias_name"] as? String, !name.isEmpty, let label = alias["alias_label"] as? String,
                !label.isEmpty, alias.count == 2
            else { return nil }
            found.append("user_alias=json:" + FakeBrazeContract.canonical(alias))
        }
        return found.count == 1 ? found[0] : nil
    }
}
