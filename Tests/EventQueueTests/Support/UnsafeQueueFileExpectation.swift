import Testing

@testable import EventQueue

/// Expects `open` to be refused with `unsafeQueueFile` whose reason contains `reasonContaining`: the one check
/// the schema tests (planted objects, the compatibility contract) make of a refusal.
func expectUnsafeQueueFile(
    reasonContaining expected: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ open: () throws(QueueError) -> Void
) {
    do {
        try open()
        Issue.record("must be refused", sourceLocation: sourceLocation)
    } catch {
        guard case .unsafeQueueFile(_, let reason) = error else {
            Issue.record("expected unsafeQueueFile, got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(reason.contains(expected), "\(reason)", sourceLocation: sourceLocation)
    }
}
