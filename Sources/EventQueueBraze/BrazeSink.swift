import EventQueue
import EventQueueDelivery
import Logging

/// Delivers records to Braze's `POST /users/track`, and erasures to `POST /users/delete` (`erase`).
///
/// A batch becomes as few requests as Braze's limits and per-user ordering allow (`BrazeBatcher`), sent one after
/// another; several batches (never sharing a user) are delivered at once, paced by one `BrazeRateGovernor` per
/// rate bucket (`BrazeEndpoint`). `BrazeBatchDelivery` maps every endpoint's answers to per-record outcomes (see
/// its table). The API key never appears in logs, errors or descriptions.
public final class BrazeSink: Sink, CustomStringConvertible, CustomReflectable {
    public let name: String
    /// Why the base URL is unusable, if it is: every batch then halts with this configuration error.
    private let baseURLHalt: SinkHalt?
    private let batcher: BrazeBatcher
    private let transport: BrazeTransport
    /// `/users/track`, in its own rate bucket.
    private let track: BrazeEndpoint
    /// `/users/delete` (`erase`), in the bucket Braze shares among the calls that change who a user is.
    private let users: BrazeEndpoint
    private let logger: Logger
    /// See `Sink.maxConcurrentDeliveries`: the drain loop's `--max-in-flight` is the cap.
    public let maxConcurrentDeliveries: Int
    let settleDelay: Duration

    /// The default `settleDelay`: ten times the 10-100 ms Braze usually takes to apply a call.
    public static let defaultSettleDelay: Duration = .seconds(1)

    /// - Parameters:
    ///   - baseURL: the REST endpoint of the account's instance, e.g. `https://rest.iad-01.braze.com`.
    ///   - maxObjectsPerRequest: the combined limit of some plans (50); `nil` for only the 75-per-array limit.
    ///   - connectTimeout: the deadline for opening a connection; a timeout is retried.
    ///   - requestTimeout: the deadline for one request, answer body included; a timeout is retried.
    ///   - maxInFlight: requests in flight at most (the send window's ceiling; a 429 halves the window).
    ///   - maxRequestsPerSecond: this host's share of the workspace's rate limit; `nil` for no cap of our own.
    ///   - settleDelay: how long an identity call holds its users' later records after Braze answered it.
    ///
    /// An unusable `baseURL` does not throw here (check it with `validate(baseURL:)`): every batch halts instead.
    public init(
        baseURL: String, apiKey: BrazeAPIKey, maxObjectsPerRequest: Int? = nil,
        connectTimeout: Duration = .seconds(5), requestTimeout: Duration = .seconds(30),
        maxInFlight: Int = DrainOptions.defaultMaxInFlight, maxRequestsPerSecond: Int? = nil,
        settleDelay: Duration = BrazeSink.defaultSettleDelay, observer: (any BrazeRequestObserver)? = nil,
        logger: Logger
    ) {
        self.settleDelay = max(.zero, settleDelay)
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        do {
            try Self.validate(baseURL: base)
            baseURLHalt = nil
        } catch {
            baseURLHalt = SinkHalt(kind: .configuration, reason: "\(error)")
        }
        name = "braze:" + BrazeBaseURL.displayed(base)
        batcher = BrazeBatcher(maxObjectsPerRequest: maxObjectsPerRequest)
        maxConcurrentDeliveries = max(1, maxInFlight)
        transport = BrazeTransport(
            connectTimeout: connectTimeout, requestTimeout: requestTimeout, maxConnections: maxConcurrentDeliveries)
        track = BrazeEndpoint(
            baseURL: base, sinkName: name, apiKey: apiKey, transport: transport, maxWindow: maxConcurrentDeliveries,
            maxRequestsPerSecond: maxRequestsPerSecond, observer: observer, logger: logger)
        users = BrazeEndpoint(
            baseURL: base, sinkName: name, apiKey: apiKey, transport: transport, maxWindow: BrazeEndpoint.usersWindow,
            maxRequestsPerSecond: nil, observer: observer, logger: logger)
        self.logger = logger
    }

    /// One full request: 75 objects (an array's limit), or the combined limit when set.
    public var recordsPerRequest: Int? { batcher.maxObjectsPerRequest ?? batcher.maxObjectsPerArray }

    /// How `/users/track` is paced now, for `/metrics` and `GET /status`.
    public func rateStatus() async -> BrazeRateStatus {
        await track.governor.snapshot
    }

    public var description: String { "BrazeSink(\(name))" }
    public var customMirror: Mirror { Mirror(self, children: ["name": name], displayStyle: .class) }

    /// `Sink.close()`: the same as `shutdown()`.
    public func close() async {
        await shutdown()
    }

    /// Closes the HTTP client's connections; call once, after the last `deliver` (a debug build traps when an
    /// HTTP client is released without it).
    public func shutdown() async {
        await transport.shutdown()
    }

    public func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        if let baseURLHalt { return DeliveryReport(halt: baseURLHalt) }
        let calls = batch.filter(\.kind.isIdentityCall)
        let records = calls.isEmpty ? batch : batch.filter { !$0.kind.isIdentityCall }
        var report = DeliveryReport()
        if !records.isEmpty {
            let encoded = BrazeEncodedObjects(records)
            let requests = batcher.split(records, size: encoded)
            var delivery = BrazeBatchDelivery(encoded: encoded, sender: track)
            await delivery.run(requests)
            logger.debug(
                "braze batch done",
                metadata: [
                    "records": "\(records.count)", "requests": "\(delivery.requestsSent)",
                    "planned_requests": "\(requests.count)",
                ])
            report = DeliveryReport(outcomes: delivery.outcomes, halt: delivery.halt)
        }
        // The claim never batches an identity call with another row of its users: no order between the two.
        if !calls.isEmpty, report.halt == nil {
            report.append(await call(calls))
        }
        return report
    }

    /// Deletes the users of `erasures` with `POST /users/delete`: one identifier type per request, at most 50 each
    /// (Braze's contract), in id order within a type, through the same runner as records (`BrazeBatchDelivery`).
    public func erase(_ erasures: [OutgoingErasure]) async -> DeliveryReport {
        if let baseURLHalt { return DeliveryReport(halt: baseURLHalt) }
        var delivery = BrazeBatchDelivery(sender: users) { records in
            let type = records.first?.erasure?.identifierType ?? .externalIDs
            return BrazeRequestBody(
                path: "/users/delete", array: type.rawValue,
                members: records.compactMap { $0.erasure?.user.brazeMember.value }, ids: records.map(\.id))
        }
        await delivery.run(Self.deletions(erasures))
        return DeliveryReport(outcomes: delivery.outcomes, halt: delivery.halt)
    }

    /// The `/users/delete` requests of `erasures`: grouped by identifier type (in order of first appearance), cut
    /// into requests of at most 50 in id order. A batch never holds two rows of one user: nothing is reordered.
    static func deletions(_ erasures: [OutgoingErasure]) -> [[OutgoingRecord]] {
        var types: [Erasure.IdentifierType] = []
        var byType: [Erasure.IdentifierType: [OutgoingRecord]] = [:]
        for erasure in erasures.sorted(by: { $0.id < $1.id }) {
            let type = erasure.identifierType
            if byType[type] == nil { types.append(type) }
            var record = OutgoingRecord(
                id: erasure.id, kind: .event, object: JSONObject(members: [erasure.user.brazeMember]),
                userKey: erasure.user.orderingKey, createdAtMilliseconds: erasure.createdAtMilliseconds,
                attempts: erasure.attempts)
            record.erasure = erasure
            byType[type, default: []].append(record)
        }
        return types.flatMap { type in
            let group = byType[type] ?? []
            return stride(from: 0, to: group.count, by: maxIdentifiersPerRequest).map {
                Array(group[$0..<min($0 + maxIdentifiersPerRequest, group.count)])
            }
        }
    }

    /// The most identifiers (or items) one request to an endpoint of the users bucket may carry.
    static let maxIdentifiersPerRequest = 50
}

extension BrazeSink {
    /// Sends identity calls (`identify`, `alias`, `merge`) in the users bucket: consecutive calls of one endpoint
    /// and array share a request, at most 50 each. Once answered, their rows stay leased for `settleDelay`, so
    /// their users' later records (held behind them by the claim) reach Braze after it applied the call: Braze is
    /// eventually consistent.
    func call(_ calls: [OutgoingRecord]) async -> DeliveryReport {
        var refused: [Int64: DeliveryOutcome] = [:]
        var requests: [[OutgoingRecord]] = []
        var lastTarget: BrazeIdentityCall.Target?
        for record in calls.sorted(by: { $0.id < $1.id }) {
            guard let item = BrazeIdentityCall(record) else {
                refused[record.id] = .rejected(reason: "not an identity call Braze takes: \(record.object.serialized)")
                continue
            }
            if item.target == lastTarget, let last = requests.indices.last,
                requests[last].count < Self.maxIdentifiersPerRequest
            {
                requests[last].append(record)
            } else {
                requests.append([record])
            }
            lastTarget = item.target
        }
        var delivery = BrazeBatchDelivery(sender: users) { records in
            let items = records.compactMap(BrazeIdentityCall.init)
            let target = items.first?.target ?? BrazeIdentityCall.Target(path: "/users/merge", array: "merge_updates")
            return BrazeRequestBody(
                path: target.path, array: target.array, members: items.map(\.item), ids: records.map(\.id))
        }
        await delivery.run(requests)
        if delivery.outcomes.values.contains(.delivered), settleDelay > .zero {
            try? await Task.sleep(for: settleDelay)
        }
        return DeliveryReport(outcomes: delivery.outcomes.merging(refused) { first, _ in first }, halt: delivery.halt)
    }
}

/// One identity call as Braze's item: its endpoint, the array it goes in, and the object.
struct BrazeIdentityCall {
    struct Target: Hashable {
        var path: String
        var array: String
    }

    var target: Target
    var item: JSONValue

    /// Braze's order of profiles to pick when an email or phone names several (required with an email or phone).
    static let prioritization: JSONValue = ["unidentified", "most_recently_updated"]

    /// `nil` for a row that is not an identity call of a shape Braze takes (the consumer's checks make that rare).
    init?(_ record: OutgoingRecord) {
        guard let user = UserIdentity(filing: record.object),
            let other = UserIdentity(filingOther: record.object, kind: record.kind)
        else { return nil }
        switch (record.kind, user, other) {
        case (.identify, .externalID(let id), .alias):
            target = Target(path: "/users/identify", array: "aliases_to_identify")
            item = .object(JSONObject(members: [.init(key: "external_id", value: .string(id)), other.brazeMember]))
        case (.identify, .externalID(let id), .email), (.identify, .externalID(let id), .phone):
            let email = if case .email = other { true } else { false }
            target = Target(path: "/users/identify", array: email ? "emails_to_identify" : "phone_numbers_to_identify")
            var object = JSONObject(members: [.init(key: "external_id", value: .string(id)), other.brazeMember])
            object["prioritization"] = Self.prioritization
            item = .object(object)
        case (.alias, .externalID(let id), .alias(let name, let label)):
            target = Target(path: "/users/alias/new", array: "user_aliases")
            item = ["external_id": .string(id), "alias_name": .string(name), "alias_label": .string(label)]
        case (.merge, _, _):
            target = Target(path: "/users/merge", array: "merge_updates")
            item = ["identifier_to_merge": Self.identifier(other), "identifier_to_keep": Self.identifier(user)]
        default:
            return nil
        }
    }

    /// An identifier of `/users/merge`: an email or phone also says which profile it means.
    static func identifier(_ user: UserIdentity) -> JSONValue {
        var object = JSONObject(members: [user.brazeMember])
        switch user {
        case .email, .phone: object["prioritization"] = prioritization
        default: break
        }
        return .object(object)
    }
}
