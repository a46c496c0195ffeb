/// One moment in the fake's timeline: a request arriving, or its answer going out, on any endpoint, in the order
/// the fake saw them. Tests check order from it (a user's deletion after the answer of every request that carried
/// the user; no `/users/track` object of the user after the deletion), not from the client's side.
public struct FakeBrazeEvent: Sendable, Hashable {
    /// A request arrived, or its answer started to go out (a dropped connection is answered with no status).
    public enum Phase: String, Sendable, Hashable {
        case started, answered
    }

    /// Position in the timeline, from 1.
    public var sequence: Int
    /// `/users/track`, `/users/delete`, `/users/identify`, `/users/alias/new` or `/users/merge`.
    public var endpoint: String
    /// The request's number on its endpoint, from 1 (`ReceivedObject.request`, `ReceivedDeletion.request`).
    public var request: Int
    public var phase: Phase
    /// The users the request names, as `external_id=text:u1` (an alias as `user_alias=json:` and its sorted JSON);
    /// empty for an answer.
    public var users: [String]
    /// The answer's status; `nil` for an arrival or a dropped connection.
    public var status: Int?
    /// When it happened, for the gaps between dependent calls (the settle delay).
    public var at = ContinuousClock.now
}

/// A `POST /users/delete` the fake answered 2xx: which users it deleted.
public struct ReceivedDeletion: Sendable, Hashable {
    /// The 1-based number of the `/users/delete` request.
    public var request: Int
    /// `external_ids`, `braze_ids`, `user_aliases`, `email_addresses` or `phone_numbers`.
    public var type: String
    /// The identifiers, as sent (an alias as its sorted JSON).
    public var identifiers: [String]
}

/// The timeline, kept in the core's state.
struct FakeBrazeTimeline: Sendable {
    private(set) var events: [FakeBrazeEvent] = []

    mutating func record(endpoint: String, request: Int, phase: FakeBrazeEvent.Phase, users: [String], status: Int?) {
        events.append(
            FakeBrazeEvent(
                sequence: events.count + 1, endpoint: endpoint, request: request, phase: phase, users: users,
                status: status))
    }
}
