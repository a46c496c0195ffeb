import EventQueue
import EventQueueDelivery

/// Delivers one claimed batch as a sequence of requests, one after another (per-user order needs an earlier
/// request answered before a later one goes), and turns the answers into one `DeliveryReport`: the one runner of
/// every endpoint, so an answer means the same whatever the endpoint. Each answer (`BrazeAnswer`) becomes the
/// records' outcome in the terms of `RetryCause`:
///
/// | answer | outcome | attempt |
/// |---|---|---|
/// | 2xx | delivered; the objects its `errors` name rejected (dead) | the rejected: one |
/// | 400 (and other 4xx below) | bisected; the one record a 400 still names is rejected (dead) | that one |
/// | 5xx, 408, a timeout, connection refused or reset, DNS, a TLS handshake that times out | `retry`, `.destination`: due at once; the batch stops | none |
/// | the same, when Braze answered another request within `upEvidence` | split (`splitSuspect`); one record still failing while its other half is answered: `retry`, `.record` (backs off, dead after `--max-attempts`) | that one |
/// | 429 (handed back; `BrazeSink` resends it itself) | `retry`, `.backPressure`, after the hint | none |
/// | 401, 403, 404, 3xx, an unverifiable TLS certificate | halt `.configuration`: every record handed back untouched | none |
///
/// Records not sent because the batch stopped, and a user's later records held behind its failed one, take the
/// failed request's cause: no attempt either way.
struct BrazeBatchDelivery {
    let sender: BrazeEndpoint
    /// The body of one request of these records: `/users/track`'s arrays, `/users/delete`'s identifiers, ...
    let body: ([OutgoingRecord]) -> BrazeRequestBody

    private(set) var outcomes: [Int64: DeliveryOutcome] = [:]
    private(set) var halt: SinkHalt?
    /// Set once a request failed in a way that stops the batch (429, 5xx, network): the records not yet sent
    /// get this retry (never counted: they were not tried).
    private var stopRetry: (reason: String, afterMilliseconds: Int64?, cause: RetryCause)?
    /// Users with a record waiting for a retry: their later records must not overtake it.
    private var heldUsers: Set<String> = []
    private(set) var requestsSent = 0
    private var cancelled = false
    /// While `splitSuspect` sends the halves of a failed request: the halves that failed too, and whether one was
    /// answered.
    private var suspecting: (failed: [(records: [OutgoingRecord], reason: String)], answered: Bool)?

    static let waitingReason = "waiting for an earlier record of the same user"

    /// A failed request is suspect (`splitSuspect`) when Braze answered another this recently (the gap between
    /// requests of a busy pass); one that fails well into an outage splits nothing.
    static let upEvidence: Duration = .seconds(2)

    /// `/users/track`: `encoded` holds the batch's objects serialized once.
    init(encoded: BrazeEncodedObjects? = nil, sender: BrazeEndpoint) {
        self.init(sender: sender) { BrazeRequestBody($0, encoded: encoded) }
    }

    init(sender: BrazeEndpoint, body: @escaping ([OutgoingRecord]) -> BrazeRequestBody) {
        self.sender = sender
        self.body = body
    }

    var stopped: Bool { halt != nil || stopRetry != nil || cancelled }

    /// Sends `requests` in order and fills in `outcomes` and `halt`.
    mutating func run(_ requests: [[OutgoingRecord]]) async {
        for request in requests {
            if stopped { break }
            await send(request)
        }
        guard halt == nil, let stopRetry else { return }
        for record in requests.joined() where outcomes[record.id] == nil {
            let reason = heldUsers.contains(record.userKey) ? Self.waitingReason : "not sent: \(stopRetry.reason)"
            outcomes[record.id] = .retry(
                reason: reason, afterMilliseconds: stopRetry.afterMilliseconds, cause: stopRetry.cause)
        }
    }

    /// Sends one request (or bisection half), recursing into halves on a 400.
    private mutating func send(_ records: [OutgoingRecord]) async {
        var sendable: [OutgoingRecord] = []
        for record in records {
            if heldUsers.contains(record.userKey) {
                outcomes[record.id] = .retry(
                    reason: Self.waitingReason, afterMilliseconds: stopRetry?.afterMilliseconds,
                    cause: stopRetry?.cause ?? .destination)
            } else {
                sendable.append(record)
            }
        }
        guard !sendable.isEmpty, !stopped else { return }
        let body = self.body(sendable)
        guard let answer = await sender.send(body) else {
            cancelled = true
            return
        }
        requestsSent += 1
        switch answer {
        case .accepted(let errors):
            var refused: [Int64: String] = [:]
            for error in errors {
                guard let ids = body.idsByArray[error.inputArray], ids.indices.contains(error.index) else { continue }
                refused[ids[error.index]] = "Braze rejected it: \(error.type)"
            }
            for record in sendable {
                outcomes[record.id] = refused[record.id].map { .rejected(reason: $0) } ?? .delivered
            }
        case .badRequest(let status, let message):
            guard sendable.count > 1 else {
                outcomes[sendable[0].id] = .rejected(reason: "Braze rejected it: \(status) \(message)")
                return
            }
            await bisect(sendable)
        case .misconfigured(let status, let message):
            // The permission the key needs is named after the endpoint: `users.track`, `users.delete`, ...
            let permission = body.path.dropFirst().replacing("/", with: ".")
            halt = SinkHalt(
                kind: .configuration,
                reason: "Braze answered \(status) to \(body.path) (\(message)): check the API key / instance URL "
                    + "(the key needs the \(permission) permission)")
        case .rateLimited(let after):
            // `BrazeEndpoint` resends a 429'd request itself; one handed back still costs no attempt.
            let reason = "Braze rate limit on \(body.path) (429)"
            retry(sendable, reason: reason, afterMilliseconds: after, cause: .backPressure)
            stopRetry = (reason, after, .backPressure)
        case .untrustedCertificate(let reason):
            halt = SinkHalt(kind: .configuration, reason: reason)
        case .transient(let reason) where suspecting == nil && sender.answered(within: Self.upEvidence):
            await splitSuspect(sendable, reason: reason)
        case .transient(let reason) where suspecting != nil:
            suspecting?.failed.append((sendable, reason))
            for record in sendable { heldUsers.insert(record.userKey) }
        case .transient(let reason):
            // Says nothing about these records (nothing was applied): no attempt; the sink is suspect.
            retry(sendable, reason: reason, afterMilliseconds: nil, cause: .destination)
            stopRetry = ("an earlier request of this batch failed: \(reason)", nil, .destination)
        }
    }

    /// A request that failed with a 5xx or a timeout right after Braze answered another: its own content may be
    /// what fails, so it is split into halves that share no user (docs/OPERATING.md, "A record that makes Braze
    /// fail"). When neither half is answered, Braze is down: the batch stops with no attempt.
    private mutating func splitSuspect(_ records: [OutgoingRecord], reason: String) async {
        guard records.count > 1 else {
            retry(
                records, reason: "Braze failed the request of this record alone while answering others: \(reason)",
                afterMilliseconds: nil, cause: .record)
            return
        }
        var users: [String] = []
        var seen: Set<String> = []
        for record in records where seen.insert(record.userKey).inserted { users.append(record.userKey) }
        let halves: [[OutgoingRecord]]
        if users.count > 1 {
            let first = Set(users[..<(users.count / 2)])
            halves = [records.filter { first.contains($0.userKey) }, records.filter { !first.contains($0.userKey) }]
        } else {
            halves = [Array(records[..<(records.count / 2)]), Array(records[(records.count / 2)...])]
        }
        let outer = suspecting
        suspecting = (failed: [], answered: false)
        for half in halves {
            let (requests, failures) = (requestsSent, suspecting?.failed.count ?? 0)
            // A single user's later half waits behind its earlier half's failure (`send` holds the user).
            await send(half)
            if requestsSent > requests, suspecting?.failed.count == failures { suspecting?.answered = true }
        }
        let split = suspecting ?? (failed: [], answered: false)
        suspecting = outer
        guard !stopped else { return }
        // One user whose earlier half failed: the later half was held; the recent answer that began this split
        // stands for Braze being up.
        guard split.answered || users.count == 1 else {
            retry(
                records.filter { outcomes[$0.id] == nil }, reason: reason, afterMilliseconds: nil, cause: .destination)
            stopRetry = ("an earlier request of this batch failed: \(reason)", nil, .destination)
            return
        }
        for failed in split.failed {
            // Held while the other half went out; split further now.
            for record in failed.records { heldUsers.remove(record.userKey) }
            await splitSuspect(failed.records, reason: failed.reason)
        }
    }

    /// Sends each half of a refused or suspect request on its own. Halves of a valid request keep every user's
    /// kind order, so each half is a valid request too; k bad records take about 2k·log2(n) requests.
    private mutating func bisect(_ records: [OutgoingRecord]) async {
        let middle = records.count / 2
        await send(Array(records[..<middle]))
        await send(Array(records[middle...]))
    }

    private mutating func retry(
        _ records: [OutgoingRecord], reason: String, afterMilliseconds: Int64?, cause: RetryCause
    ) {
        for record in records {
            outcomes[record.id] = .retry(reason: reason, afterMilliseconds: afterMilliseconds, cause: cause)
            heldUsers.insert(record.userKey)
        }
    }
}
