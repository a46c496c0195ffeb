/// What the network handler should do with one request.
struct FakeBrazeAction: Sendable {
    enum Kind: Sendable {
        case respond
        case drop
        case resetMidResponse
        /// Never answer; leave the connection open.
        case hang
    }

    var kind: Kind = .respond
    var delayMilliseconds = 0
    var status: Int
    var headers: [(String, String)] = []
    var body: [UInt8]
    /// The request this answers (its number on `endpoint`), to count it out of flight once answered.
    var request: Int?
    /// `/users/track` or `/users/delete`.
    var endpoint = "/users/track"
}
