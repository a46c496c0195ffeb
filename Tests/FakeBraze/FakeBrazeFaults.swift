import EventQueueRecords

/// The faults a `FakeBrazeServer` injects. Deterministic: rates are drawn from a generator seeded with `seed`,
/// so a failing run can be replayed.
///
/// Decodable from JSON (the `--faults` option and `POST /_faults`) with the property names as keys, every key
/// optional, e.g. `{"seed": 7, "serverErrorRate": 0.1, "rateLimitNextRequests": 2, "retryAfterSeconds": 1}`.
public struct FakeBrazeFaults: Sendable, Hashable, Codable {
    /// Seeds the generator behind every rate.
    public var seed: UInt64 = 1
    /// Fraction of requests answered 500.
    public var serverErrorRate: Double = 0
    /// The next N requests are answered 429.
    public var rateLimitNextRequests: Int = 0
    /// Fraction of requests answered 429.
    public var rateLimitRate: Double = 0
    /// On a 429, `X-RateLimit-Reset` is now plus this many seconds (every response carries the header; this
    /// only sets the reset of rate-limited ones).
    public var rateLimitResetAfterSeconds: Int?
    /// On a 429, the `Retry-After` header (seconds); absent when `nil`.
    public var retryAfterSeconds: Int?
    /// Enforce a workspace rate limit as Braze does: at most this many requests per fixed window of
    /// `workspaceWindowSeconds` (aligned to the epoch, so every client sees the same windows), 429 beyond it;
    /// `nil` for Braze's 3,000 per 3 s, reported in the headers but not enforced.
    public var workspaceLimit: Int?
    /// The length of the workspace limit's fixed windows, in seconds.
    public var workspaceWindowSeconds: Int = 3
    /// Every `/users/track` answer is delayed this long (scheduled on the event loop, never blocking it).
    public var delayMilliseconds: Int = 0
    /// Fraction of requests whose connection is closed without any response.
    public var dropConnectionRate: Double = 0
    /// Fraction of responses cut off half way (head and part of the body written, then the connection closed).
    public var resetMidResponseRate: Double = 0
    /// Fraction of requests that hang: read whole, never answered, the connection left open (a sink that accepts
    /// and stalls; the client's request timeout ends it). Nothing of such a request is applied.
    public var hangRate: Double = 0
    /// Objects with a string value (top level or in `properties`) equal to this are refused in `errors`.
    public var rejectMarker: String?
    /// A request whose body contains this text is answered 400 as a whole.
    public var poisonMarker: String?
    /// A request whose body contains this text is answered 503 (a record that makes Braze or a proxy fail).
    public var serverErrorMarker: String?
    /// Every request after the Nth is answered 401 (a key revoked mid-run).
    public var unauthorizedAfterRequests: Int?
    /// The combined per-request limit of some plans (50); `nil` for only the 75-per-array limit.
    public var maxObjectsPerRequest: Int?

    /// A hostile sink: every request is answered with this status and `hostileMessage` as its `message`, where
    /// `{authorization}` stands for the request's `Authorization` header (a server that echoes the key), e.g.
    /// ESC sequences to test what reaches a terminal.
    public var hostileStatus: Int?
    /// The `message` of `hostileStatus` answers; `{authorization}` is replaced by the request's header.
    public var hostileMessage: String = "echo: {authorization}"
    /// 2xx answers carry this many bytes of padding (an over-size answer after a successful delivery).
    public var successPaddingBytes: Int = 0
    /// Every request is answered `301 Moved Permanently` with this `Location`.
    public var redirectLocation: String?
    /// `/users/delete`: the next requests are answered with these statuses, one each, in order (`[503]`: one
    /// transient failure; `[400]`: one refusal), before the contract is checked.
    public var deleteFailures: [Int] = []
    /// `/users/delete`: a request naming this identifier is answered 400 as a whole (what bisection finds).
    public var deleteRejectIdentifier: String?
    /// `/users/delete`: every answer is delayed this long.
    public var deleteDelayMilliseconds: Int = 0

    public init() {}

    /// No faults: a well-behaved Braze.
    public static let none = FakeBrazeFaults()

    enum CodingKeys: String, CodingKey {
        case seed, serverErrorRate, rateLimitNextRequests, rateLimitRate, rateLimitResetAfterSeconds
        case retryAfterSeconds, delayMilliseconds, dropConnectionRate, resetMidResponseRate, hangRate, rejectMarker
        case poisonMarker, serverErrorMarker, unauthorizedAfterRequests, maxObjectsPerRequest, workspaceLimit,
            workspaceWindowSeconds
        case hostileStatus, hostileMessage, successPaddingBytes, redirectLocation
        case deleteFailures, deleteRejectIdentifier, deleteDelayMilliseconds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var faults = FakeBrazeFaults()
        faults.seed = try container.decodeIfPresent(UInt64.self, forKey: .seed) ?? faults.seed
        faults.serverErrorRate = try container.decodeIfPresent(Double.self, forKey: .serverErrorRate) ?? 0
        faults.rateLimitNextRequests = try container.decodeIfPresent(Int.self, forKey: .rateLimitNextRequests) ?? 0
        faults.rateLimitRate = try container.decodeIfPresent(Double.self, forKey: .rateLimitRate) ?? 0
        faults.rateLimitResetAfterSeconds = try container.decodeIfPresent(
            Int.self, forKey: .rateLimitResetAfterSeconds)
        faults.retryAfterSeconds = try container.decodeIfPresent(Int.self, forKey: .retryAfterSeconds)
        faults.delayMilliseconds = try container.decodeIfPresent(Int.self, forKey: .delayMilliseconds) ?? 0
        faults.dropConnectionRate = try container.decodeIfPresent(Double.self, forKey: .dropConnectionRate) ?? 0
        faults.resetMidResponseRate = try container.decodeIfPresent(Double.self, forKey: .resetMidResponseRate) ?? 0
        faults.hangRate = try container.decodeIfPresent(Double.self, forKey: .hangRate) ?? 0
        faults.rejectMarker = try container.decodeIfPresent(String.self, forKey: .rejectMarker)
        faults.poisonMarker = try container.decodeIfPresent(String.self, forKey: .poisonMarker)
        faults.serverErrorMarker = try container.decodeIfPresent(String.self, forKey: .serverErrorMarker)
        faults.unauthorizedAfterRequests = try container.decodeIfPresent(Int.self, forKey: .unauthorizedAfterRequests)
        faults.maxObjectsPerRequest = try container.decodeIfPresent(Int.self, forKey: .maxObjectsPerRequest)
        faults.workspaceLimit = try container.decodeIfPresent(Int.self, forKey: .workspaceLimit)
        faults.workspaceWindowSeconds = max(
            1, try container.decodeIfPresent(Int.self, forKey: .workspaceWindowSeconds) ?? faults.workspaceWindowSeconds
        )
        faults.hostileStatus = try container.decodeIfPresent(Int.self, forKey: .hostileStatus)
        faults.hostileMessage =
            try container.decodeIfPresent(String.self, forKey: .hostileMessage) ?? faults.hostileMessage
        faults.successPaddingBytes = try container.decodeIfPresent(Int.self, forKey: .successPaddingBytes) ?? 0
        faults.redirectLocation = try container.decodeIfPresent(String.self, forKey: .redirectLocation)
        faults.deleteFailures = try container.decodeIfPresent([Int].self, forKey: .deleteFailures) ?? []
        faults.deleteRejectIdentifier = try container.decodeIfPresent(String.self, forKey: .deleteRejectIdentifier)
        faults.deleteDelayMilliseconds = try container.decodeIfPresent(Int.self, forKey: .deleteDelayMilliseconds) ?? 0
        self = faults
    }
}

extension SplitMix64 {
    /// True with probability `rate`; draws nothing when the rate is 0, so enabling one fault does not shift the
    /// draws of another.
    mutating func roll(_ rate: Double) -> Bool {
        guard rate > 0 else { return false }
        return Double(next() >> 11) / Double(1 << 53) < rate
    }
}
