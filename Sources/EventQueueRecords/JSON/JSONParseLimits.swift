/// Resource limits applied while parsing untrusted input.
///
/// Nesting is limited because every level costs memory and, in consumers that walk values recursively, stack:
/// a payload of a few megabytes of `[` must be rejected up front rather than crash a process later.
public struct JSONParseLimits: Sendable, Hashable {
    /// The largest number of nested arrays and objects accepted; a top-level scalar has depth 0.
    public var maxDepth: Int

    /// Limits for untrusted input; 64 levels is far beyond any object Braze takes.
    public init(maxDepth: Int = 64) {
        self.maxDepth = maxDepth
    }
}
