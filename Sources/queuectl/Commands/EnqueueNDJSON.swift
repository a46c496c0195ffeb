import EventQueue
import EventQueueDelivery

/// `enqueue --ndjson`: every line of the input in one transaction, read as it is enqueued.
enum NDJSONEnqueue {
    /// What a run enqueued, kept small whatever the input's size: new ids in one transaction are consecutive, so
    /// they are kept as ranges; only the first few dead letters' reasons are kept for the warning lines.
    struct Result {
        var idRanges: [(first: Int64, count: Int64)] = []
        var deadLettered = 0
        var deadReasons: [(id: Int64, reason: String)] = []
        static let reasonsShown = 20

        mutating func append(_ id: Int64) {
            if let last = idRanges.last, last.first + last.count == id {
                idRanges[idRanges.count - 1].count += 1
            } else {
                idRanges.append((id, 1))
            }
        }

        func print() {
            var text = ""
            for range in idRanges {
                for id in range.first..<(range.first + range.count) {
                    text += "\(id)\n"
                    if text.utf8.count >= 1 << 16 {
                        writeStandardOutput(text)
                        text = ""
                    }
                }
            }
            writeStandardOutput(text)
            for item in deadReasons {
                writeStandardError(
                    "queuectl: warning: set aside as dead letter \(item.id): \(item.reason)".replacingNewlines() + "\n")
            }
            if deadLettered > deadReasons.count {
                writeStandardError(
                    "queuectl: warning: \(deadLettered - deadReasons.count) more lines set aside as dead letters "
                        + "(queuectl dead list)\n")
            }
        }
    }

    static func run(input: NDJSONInput, writer: QueueWriter, deadLetterInvalid: Bool) throws -> Result {
        try writer.batch { batch in
            var result = Result()
            while let next = try input.next() {
                let (line, text) = next
                let record: Record
                do throws(ValidationError) {
                    record = try Record(jsonLine: text)
                } catch {
                    var located = error
                    located.line = line
                    let note =
                        deadLetterInvalid
                        ? " (a line that is not a record cannot be set aside as a dead letter)" : ""
                    throw fail(located.description + note + "; nothing was enqueued", status: ExitStatus.invalidInput)
                }
                let outcome: BatchOutcome
                do throws(QueueError) {
                    if deadLetterInvalid {
                        outcome = try batch.enqueueOrDeadLetter(record, context: "line \(line): ")
                    } else {
                        outcome = try batch.enqueue(record)
                    }
                } catch {
                    if case .invalidRecord(var validation) = error {
                        validation.line = line
                        throw fail(validation.description + "; nothing was enqueued", status: ExitStatus.invalidInput)
                    }
                    if case .invalidIdempotencyKey = error {
                        throw fail(
                            "line \(line): \(error.description); nothing was enqueued", status: ExitStatus.invalidInput)
                    }
                    throw fail(error)
                }
                result.append(outcome.id)
                if case .deadLettered(let id, let reason) = outcome {
                    result.deadLettered += 1
                    if result.deadReasons.count < Result.reasonsShown { result.deadReasons.append((id, reason)) }
                }
            }
            return result
        }
    }
}
