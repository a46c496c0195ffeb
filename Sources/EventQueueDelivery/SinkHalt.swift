/// Why a sink wants the drain pass to stop.
public struct SinkHalt: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The sink cannot work until someone fixes its configuration (a bad API key, a wrong URL). Records
        /// are kept untouched, attempts are not counted, and the next launch tries again.
        case configuration
        /// The destination is down; records keep their retry schedule and the pass ends early.
        case unavailable
    }

    public var kind: Kind
    public var reason: String

    public init(kind: Kind, reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { "\(kind.rawValue): \(reason)" }
}
