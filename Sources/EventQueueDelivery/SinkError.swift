/// A sink that cannot be set up.
public enum SinkError: Error, Sendable, Hashable, CustomStringConvertible {
    case unknownSpec(String)
    case cannotOpen(spec: String, reason: String)

    public var description: String {
        switch self {
        case .unknownSpec(let spec):
            return "unknown sink \"\(spec)\": use jsonl:PATH (jsonl:- for stdout) or null"
        case .cannotOpen(let spec, let reason):
            return "cannot open sink \(spec): \(reason)"
        }
    }
}
