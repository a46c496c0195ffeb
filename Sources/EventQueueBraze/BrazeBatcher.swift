import EventQueue
import EventQueueDelivery

/// Splits a batch into `/users/track` requests that Braze accepts and that keep each user's records in order.
///
/// Braze applies a request's arrays in a fixed order (attributes, then events, then purchases), whatever order
/// the objects were written in. So a request may carry several records of one user only if, in id order, their
/// kinds never go backwards in that rank; an attribute that follows a user's event must wait for the next
/// request, which is sent after this one is answered. Requests are never back-filled, so they come out in id
/// order too.
public struct BrazeBatcher: Sendable, Hashable {
    /// Braze's documented limit per array (`400 Max Input Length Exceeded` beyond it).
    public static let maxObjectsPerArray = 75

    public var maxObjectsPerArray: Int
    /// Some plans accept at most 50 objects per request, all arrays combined; `nil` for no combined limit.
    public var maxObjectsPerRequest: Int?

    public init(maxObjectsPerArray: Int = BrazeBatcher.maxObjectsPerArray, maxObjectsPerRequest: Int? = nil) {
        self.maxObjectsPerArray = max(1, maxObjectsPerArray)
        self.maxObjectsPerRequest = maxObjectsPerRequest.map { max(1, $0) }
    }

    /// The rank in which Braze applies a request's arrays.
    static func rank(_ kind: RecordKind) -> Int {
        switch kind {
        case .attribute: return 0
        case .event: return 1
        case .purchase: return 2
        }
    }

    /// Splits `records` (in id order) into requests, in order; every record is in exactly one request.
    public func split(_ records: [OutgoingRecord]) -> [[OutgoingRecord]] {
        var requests: [[OutgoingRecord]] = []
        var current: [OutgoingRecord] = []
        var perArray = [0, 0, 0]
        var lastRankOfUser: [String: Int] = [:]
        for record in records {
            let rank = Self.rank(record.kind)
            let fits =
                perArray[rank] < maxObjectsPerArray
                && current.count < (maxObjectsPerRequest ?? Int.max)
                && (lastRankOfUser[record.userKey] ?? 0) <= rank
            if !fits {
                requests.append(current)
                current = []
                perArray = [0, 0, 0]
                lastRankOfUser = [:]
            }
            current.append(record)
            perArray[rank] += 1
            lastRankOfUser[record.userKey] = rank
        }
        if !current.isEmpty { requests.append(current) }
        return requests
    }
}
