/// An environment variable with a value that cannot be used.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var variable: String
    public var value: String
    public var expected: String

    public var description: String { "\(variable)=\"\(value)\" is not valid: expected \(expected)" }
}
