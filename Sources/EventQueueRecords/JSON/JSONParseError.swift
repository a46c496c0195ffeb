/// Why a document was rejected, and where.
///
/// The byte offset (not a line/column) is what a queue can report cheaply and exactly: payloads are usually
/// single-line compact JSON, and the offset points at the same byte whether the caller holds a `String` or raw
/// UTF-8, so a writer can log it next to the rejected payload and an operator can find the problem.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The byte offset into the UTF-8 input where the problem is.
    public var offset: Int
    /// What is wrong, e.g. `duplicate key "a"`, `invalid UTF-8: overlong encoding`.
    public var message: String

    /// A parse error at byte `offset` of the input.
    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    /// "invalid JSON at byte 12: …": the place and the problem in one line.
    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}
