import EventQueue
import EventQueueDelivery

/// Splits a batch into `/users/track` requests that Braze accepts and that keep each user's records in order.
///
/// Braze applies a request's arrays in a fixed order (attributes, events, purchases), so a request carries several
/// records of one user only if, in id order, their kinds never go backwards in that rank; else the later record
/// waits for the next request. Requests are never back-filled (they stay in id order) and stay under Braze's 4 MB
/// body limit.
public struct BrazeBatcher: Sendable, Hashable {
    /// Braze's documented limit per array (`400 Max Input Length Exceeded` beyond it).
    public static let maxObjectsPerArray = 75

    public var maxObjectsPerArray: Int
    /// Some plans accept at most 50 objects per request, all arrays combined; `nil` for no combined limit.
    public var maxObjectsPerRequest: Int?
    /// The largest request body, in bytes: Braze's 4 MB, counted as 4,000,000 (the stricter reading).
    public var maxRequestBytes: Int

    public static let maxRequestBytes = 4_000_000

    public init(
        maxObjectsPerArray: Int = BrazeBatcher.maxObjectsPerArray, maxObjectsPerRequest: Int? = nil,
        maxRequestBytes: Int = BrazeBatcher.maxRequestBytes
    ) {
        self.maxObjectsPerArray = max(1, maxObjectsPerArray)
        self.maxObjectsPerRequest = maxObjectsPerRequest.map { max(1, $0) }
        self.maxRequestBytes = max(BrazeRequestBody.envelopeBytes + 1, maxRequestBytes)
    }

    /// The rank in which Braze applies a request's arrays (3: an identity call, never in a `/users/track` request).
    static func rank(_ kind: RecordKind) -> Int { BrazeRequestBody.arrayOrder.firstIndex(of: kind) ?? 3 }

    /// Splits `records` (in id order) into requests, in order; every record is in exactly one request.
    public func split(_ records: [OutgoingRecord]) -> [[OutgoingRecord]] {
        split(records, size: BrazeEncodedObjects(records))
    }

    /// `split`, measuring each record by its serialized object. A record too large for any request goes alone
    /// (Braze then refuses it, and only it is dead-lettered).
    func split(_ records: [OutgoingRecord], size encoded: BrazeEncodedObjects) -> [[OutgoingRecord]] {
        var requests: [[OutgoingRecord]] = []
        var current: [OutgoingRecord] = []
        var perArray = [0, 0, 0]
        var bytes = BrazeRequestBody.envelopeBytes
        for record in records {
            let rank = Self.rank(record.kind)
            let size = encoded.size(of: record) + 1
            let fits =
                perArray[rank] < maxObjectsPerArray
                && current.count < (maxObjectsPerRequest ?? Int.max)
                && bytes + size <= maxRequestBytes
                && !Self.userGoesBackwards(record, rank: rank, in: current, perArray: perArray)
            if !fits, !current.isEmpty {
                requests.append(current)
                current = []
                perArray = [0, 0, 0]
                bytes = BrazeRequestBody.envelopeBytes
            }
            current.append(record)
            perArray[rank] += 1
            bytes += size
        }
        if !current.isEmpty { requests.append(current) }
        return requests
    }

    /// Whether `request` holds a record of `record`'s user of a higher rank, which Braze would apply after it.
    /// Only a request with a record of a higher rank at all is searched, so a batch of one kind costs no lookup.
    private static func userGoesBackwards(
        _ record: OutgoingRecord, rank: Int, in request: [OutgoingRecord], perArray: [Int]
    ) -> Bool {
        guard perArray[(rank + 1)...].contains(where: { $0 > 0 }) else { return false }
        return request.contains { $0.userKey == record.userKey && Self.rank($0.kind) > rank }
    }
}
