import EventQueue
import Logging
import Testing

@testable import EventQueueDelivery

/// A one-shot signal: `wait()` returns once `fire()` has been called (before or after the wait began).
struct Signal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func fire() {
        continuation.yield()
        continuation.finish()
    }

    func wait() async {
        for await _ in stream { break }
    }
}

/// A logger that drops everything, so test output stays readable.
let quietLogger = Logger(label: "eventqueue.delivery.tests") { _ in SwiftLogNoOpLogHandler() }

/// An event of user `user`, with its name as a property so payloads differ.
func testEvent(_ name: String, user: String) -> Record {
    Record.event(name, user: .externalID(user), properties: ["n": .string(name)])
}

/// Enqueues records through the library's writer (its own connection, closed afterwards); returns their ids.
@discardableResult
func enqueue(_ records: [Record], at path: String) throws -> [Int64] {
    let writer = try QueueWriter(path: path)
    defer { writer.close() }
    return try writer.enqueue(contentsOf: records)
}

/// Runs `body` with a fresh consumer on `path`, independent of the store under test.
func inspect<T>(_ path: String, _ body: (QueueConsumer) throws -> T) throws -> T {
    let consumer = try QueueConsumer(path: path)
    defer { consumer.close() }
    return try body(consumer)
}

/// Live records (pending and leased) keyed by id, as a fresh consumer sees them.
func liveRecords(_ path: String) throws -> [Int64: QueuedRecord] {
    let live = try inspect(path) { try $0.admin.peek(limit: 100_000) }
    return Dictionary(uniqueKeysWithValues: live.map { ($0.id, $0) })
}

/// Dead letters keyed by id.
func deadRecords(_ path: String) throws -> [Int64: QueuedRecord] {
    let dead = try inspect(path) { try $0.admin.deadLetters() }
    return Dictionary(uniqueKeysWithValues: dead.map { ($0.id, $0) })
}

/// A drainer over a new store for `path`, on `clock` (the real one unless a test moves time itself); the caller
/// closes the store.
func makeDrainer(
    _ path: String, sink: any Sink, options: DrainOptions = DrainOptions(),
    queueOptions: QueueOptions = QueueOptions(), clock: any DrainClock = SystemDrainClock()
) throws -> Drainer {
    let store = try QueueStore(path: path, options: queueOptions)
    return Drainer(store: store, sink: sink, options: options, logger: quietLogger, clock: clock)
}

/// Runs one pass and closes the drainer's store.
func drainOnce(
    _ drainer: Drainer, shouldStop: @escaping @Sendable () -> Bool = { false }
) async throws -> DrainSummary {
    let summary = try await drainer.drain(shouldStop: shouldStop)
    await drainer.store.close()
    return summary
}
