import EventQueue
import EventQueueDelivery

/// The body of one `POST /users/delete` request: one identifier type, at most 50 identifiers (Braze's contract),
/// and which erasure sits at each position.
struct BrazeDeleteBody: Sendable, Hashable {
    var type: Erasure.IdentifierType
    var ids: [Int64]
    var bytes: [UInt8]

    /// The most identifiers one request may name.
    static let maxIdentifiers = 50

    /// `{"external_ids":["u1","u2"]}`, `{"user_aliases":[{"alias_name":"n","alias_label":"l"}]}`, ...: every
    /// erasure must be of `type`.
    init(_ erasures: [OutgoingErasure], type: Erasure.IdentifierType) {
        var identifiers: [JSONValue] = []
        for erasure in erasures {
            identifiers.append(erasure.user.brazeMember.value)
        }
        self.type = type
        ids = erasures.map(\.id)
        bytes = Array(JSONValue.object([type.rawValue: .array(identifiers)]).serialized.utf8)
    }

    /// The requests for `erasures`: grouped by identifier type (in the order the types first appear), each group
    /// cut into requests of at most `maxIdentifiers`, erasures in id order within each.
    static func requests(_ erasures: [OutgoingErasure]) -> [[OutgoingErasure]] {
        var types: [Erasure.IdentifierType] = []
        var byType: [Erasure.IdentifierType: [OutgoingErasure]] = [:]
        for erasure in erasures.sorted(by: { $0.id < $1.id }) {
            let type = erasure.identifierType
            if byType[type] == nil { types.append(type) }
            byType[type, default: []].append(erasure)
        }
        var requests: [[OutgoingErasure]] = []
        for type in types {
            let group = byType[type] ?? []
            for start in stride(from: 0, to: group.count, by: maxIdentifiers) {
                requests.append(Array(group[start..<min(start + maxIdentifiers, group.count)]))
            }
        }
        return requests
    }
}

/// What sends one `/users/delete` request and interprets its answer: `BrazeDeleteSender` (pacing, resending after a
/// 429, the HTTP client), or a scripted stand-in in a test. `nil` when the delivery was cancelled before an answer.
protocol BrazeDeleteRequestSender: Sendable {
    func sendDelete(_ body: BrazeDeleteBody) async -> BrazeAnswer?
}

/// Turns a batch of erasures into `/users/delete` requests, sent one after another, and their answers into one
/// `DeliveryReport`, with the classification of `/users/track` (`BrazeAnswer.interpret`): 2xx deleted; a 400 is
/// bisected down to the identifier Braze refuses, which is dead-lettered; 401/403/404, a redirect or an untrusted
/// certificate halt the pass (nothing counted); 5xx, 408 and network failures are retried, and stop the batch.
struct BrazeDeleteDelivery {
    let sender: any BrazeDeleteRequestSender

    private(set) var outcomes: [Int64: DeliveryOutcome] = [:]
    private(set) var halt: SinkHalt?
    private(set) var requestsSent = 0
    /// Set once a request failed in a way that stops the batch: the erasures not yet sent get this retry (never
    /// counted: they were not tried).
    private var stopRetry: (reason: String, afterMilliseconds: Int64?, cause: RetryCause)?
    private var cancelled = false

    init(sender: any BrazeDeleteRequestSender) {
        self.sender = sender
    }

    private var stopped: Bool { halt != nil || stopRetry != nil || cancelled }

    /// Sends `erasures` (`BrazeDeleteBody.requests`) and fills in `outcomes` and `halt`.
    mutating func run(_ erasures: [OutgoingErasure]) async {
        let requests = BrazeDeleteBody.requests(erasures)
        for request in requests {
            if stopped { break }
            await send(request)
        }
        guard halt == nil, let stopRetry else { return }
        for erasure in erasures where outcomes[erasure.id] == nil {
            outcomes[erasure.id] = .retry(
                reason: "not sent: \(stopRetry.reason)", afterMilliseconds: stopRetry.afterMilliseconds,
                cause: stopRetry.cause)
        }
    }

    /// Sends one request (or bisection half), recursing into halves on a 400.
    private mutating func send(_ erasures: [OutgoingErasure]) async {
        guard let first = erasures.first, !stopped else { return }
        let body = BrazeDeleteBody(erasures, type: first.identifierType)
        guard let answer = await sender.sendDelete(body) else {
            cancelled = true
            return
        }
        requestsSent += 1
        switch answer {
        case .accepted:
            for erasure in erasures { outcomes[erasure.id] = .delivered }
        case .badRequest(let status, let message):
            guard erasures.count > 1 else {
                outcomes[first.id] = .rejected(reason: "Braze refused the deletion: \(status) \(message)")
                return
            }
            let middle = erasures.count / 2
            await send(Array(erasures[..<middle]))
            await send(Array(erasures[middle...]))
        case .misconfigured(let status, let message):
            halt = SinkHalt(
                kind: .configuration,
                reason:
                    "Braze answered \(status) to /users/delete (\(message)): check the API key (it needs the "
                    + "users.delete permission) and the instance URL")
        case .untrustedCertificate(let reason):
            halt = SinkHalt(kind: .configuration, reason: reason)
        case .rateLimited(let after):
            // `BrazeDeleteSender` sends a 429'd request again itself; a sender that hands one back costs no attempt.
            let reason = "Braze rate limit on /users/delete (429)"
            for erasure in erasures {
                outcomes[erasure.id] = .retry(reason: reason, afterMilliseconds: after, cause: .backPressure)
            }
            stopRetry = (reason, after, .backPressure)
        case .transient(let reason):
            for erasure in erasures { outcomes[erasure.id] = .retry(reason: reason, cause: .destination) }
            stopRetry = ("an earlier deletion request of this batch failed: \(reason)", nil, .destination)
        }
    }
}
