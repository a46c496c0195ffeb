/// A setting that cannot work; the message says which one and what to use instead.
struct ConfigurationProblem: Error, Sendable, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
