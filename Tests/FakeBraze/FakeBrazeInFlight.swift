import Foundation

/// Watches the `/users/track` requests in flight (received, not yet answered): counts a user present in two
/// of them at once (which would break per-user order: Braze applies concurrent requests in any order), the
/// most requests in flight at once, and the most requests started within any 1 s window. A `/users/delete` request
/// is watched too, under its negated number, so a deletion in flight together with a record of its user counts as
/// an overlap.
struct FakeBrazeInFlight: Sendable {
    /// Users of each request in flight, by request number.
    private var usersByRequest: [Int: [String]] = [:]
    /// How many requests in flight carry each user.
    private var requestsByUser: [String: Int] = [:]
    /// Start times (seconds, monotonic) of the requests of the last second.
    private var recentStarts: [Double] = []

    /// Times a request arrived carrying a user already in another request in flight (one per such user).
    private(set) var userOverlaps = 0
    private(set) var maxInFlight = 0
    private(set) var maxRequestsInOneSecond = 0

    mutating func started(request: Int, users: [String], at seconds: Double) {
        for user in users {
            if requestsByUser[user, default: 0] > 0 { userOverlaps += 1 }
            requestsByUser[user, default: 0] += 1
        }
        usersByRequest[request] = users
        maxInFlight = max(maxInFlight, usersByRequest.count)
        recentStarts.removeAll { $0 <= seconds - 1 }
        recentStarts.append(seconds)
        maxRequestsInOneSecond = max(maxRequestsInOneSecond, recentStarts.count)
    }

    mutating func finished(request: Int) {
        guard let users = usersByRequest.removeValue(forKey: request) else { return }
        for user in users {
            let left = requestsByUser[user, default: 1] - 1
            requestsByUser[user] = left > 0 ? left : nil
        }
    }

    mutating func resetCounters() {
        userOverlaps = 0
        maxInFlight = usersByRequest.count
        maxRequestsInOneSecond = 0
        recentStarts = []
    }

    /// The distinct users a parsed request body names (`external_id`, `braze_id`, `user_alias`, `email`,
    /// `phone`); empty when the body is not a JSON object. Text identifiers (nearly all) are keyed as they are;
    /// only an alias object is re-serialized, with sorted keys, to compare equal however its keys were ordered.
    static func users(in parsed: Any?) -> [String] {
        guard let root = parsed as? [String: Any] else { return [] }
        var users = Set<String>()
        for array in FakeBrazeContract.arrays {
            for case let object as [String: Any] in root[array] as? [Any] ?? [] {
                for field in ["external_id", "braze_id", "user_alias", "email", "phone"] {
                    guard let value = object[field] else { continue }
                    if let text = value as? String {
                        users.insert(field + "=text:" + text)
                    } else {
                        users.insert(field + "=json:" + FakeBrazeContract.canonical(value))
                    }
                    break
                }
            }
        }
        return users.sorted()
    }
}
