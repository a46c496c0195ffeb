/// A sink named on the command line: `jsonl:PATH` (`jsonl:-` is stdout) or `null`.
public enum SinkSpec: Sendable, Hashable, CustomStringConvertible {
    case jsonLines(path: String)
    case null

    /// Parses a spec; the error says which specs exist.
    public init(parsing text: String) throws(SinkError) {
        if text == "null" {
            self = .null
        } else if text.hasPrefix("jsonl:"), text.count > 6 {
            self = .jsonLines(path: String(text.dropFirst(6)))
        } else {
            throw SinkError.unknownSpec(text)
        }
    }

    public var description: String {
        switch self {
        case .jsonLines(let path): return "jsonl:" + path
        case .null: return "null"
        }
    }

    public func makeSink() throws(SinkError) -> any Sink {
        switch self {
        case .jsonLines(let path): return try JSONLinesSink(path: path)
        case .null: return NullSink()
        }
    }
}

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
