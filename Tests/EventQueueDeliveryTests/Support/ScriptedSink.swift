import EventQueue
import Synchronization

@testable import EventQueueDelivery

/// A sink whose answers are decided by a closure, and which records every batch it is handed.
///
/// The script runs as soon as a batch arrives and its report is the answer: it can signal the test, enqueue more
/// records, or play a slow destination by waiting for the test's signal (never for the wall clock).
final class ScriptedSink: Sink {
    /// Decides the report for one batch; `call` counts batches from 0.
    typealias Script = @Sendable (_ call: Int, _ batch: [OutgoingRecord]) async -> DeliveryReport

    let name: String
    private let script: Script
    private let received = Mutex<[[OutgoingRecord]]>([])

    init(name: String = "scripted", script: @escaping Script) {
        self.name = name
        self.script = script
    }

    /// A sink that decides each record's outcome on its own; `nil` leaves the record without an outcome.
    convenience init(
        name: String = "scripted",
        outcome: @escaping @Sendable (_ call: Int, _ record: OutgoingRecord) -> DeliveryOutcome?
    ) {
        self.init(name: name) { call, batch in
            var outcomes: [Int64: DeliveryOutcome] = [:]
            for record in batch {
                if let answer = outcome(call, record) { outcomes[record.id] = answer }
            }
            return DeliveryReport(outcomes: outcomes)
        }
    }

    /// A sink that accepts everything.
    static func acceptingEverything() -> ScriptedSink {
        ScriptedSink { _, batch in DeliveryReport(.delivered, for: batch) }
    }

    /// A slow destination the test releases: fires `entered` when a batch arrives and holds it until `proceed`
    /// fires, then accepts it. With `onlyFirst`, later batches are accepted at once.
    static func holding(entered: Signal, until proceed: Signal, onlyFirst: Bool = false) -> ScriptedSink {
        ScriptedSink { call, batch in
            if !onlyFirst || call == 0 {
                entered.fire()
                await proceed.wait()
            }
            return DeliveryReport(.delivered, for: batch)
        }
    }

    func deliver(_ batch: [OutgoingRecord]) async -> DeliveryReport {
        let call = received.withLock { batches in
            batches.append(batch)
            return batches.count - 1
        }
        return await script(call, batch)
    }

    /// Every batch handed to the sink, in order.
    var batches: [[OutgoingRecord]] { received.withLock { $0 } }

    /// The ids of every batch, in order.
    var batchIDs: [[Int64]] { batches.map { $0.map(\.id) } }

    /// Every record handed to the sink, in the order received (a retried record appears once per attempt).
    var records: [OutgoingRecord] { batches.flatMap { $0 } }

    var ids: [Int64] { records.map(\.id) }

    var callCount: Int { received.withLock { $0.count } }
}
