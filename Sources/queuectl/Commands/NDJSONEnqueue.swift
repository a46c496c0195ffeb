import EventQueue
import EventQueueDelivery
import EventQueueCommandLine

#if canImport(Glibc)
    import Glibc
#endif

/// `enqueue --ndjson`: every line of the input checked, then enqueued in short transactions as it is read again.
enum NDJSONEnqueue {
    /// What a run enqueued, kept small whatever the input's size: new ids in one transaction are consecutive, so
    /// they are kept as ranges (one per transaction of 1,000 at most, fewer when no other writer came between);
    /// only the first few dead letters' reasons are kept for the warning lines.
    struct Result {
        var idRanges: [(first: Int64, count: Int64)] = []
        var deadLettered = 0
        var deadReasons: [(id: Int64, reason: String)] = []
        static let reasonsShown = 20

        mutating func append(contentsOf chunk: Result) {
            for range in chunk.idRanges { append(range) }
            deadLettered += chunk.deadLettered
            deadReasons += chunk.deadReasons.prefix(Self.reasonsShown - deadReasons.count)
        }

        mutating func append(_ id: Int64) { append((id, 1)) }

        private mutating func append(_ range: (first: Int64, count: Int64)) {
            if let last = idRanges.last, last.first + last.count == range.first {
                idRanges[idRanges.count - 1].count += range.count
            } else {
                idRanges.append(range)
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

    /// The most records one transaction appends: about 20 ms of inserts, so a bulk enqueue never keeps another
    /// writer (or the daemon's ack) waiting beyond a short write lock, whatever the input's size.
    static let recordsPerTransaction = 1000

    /// The pause after each chunk: 1 ms, about a twentieth of a chunk's time (600,000 records: 0.6 s).
    static let pauseBetweenTransactionsMicroseconds: UInt32 = 1000

    /// Reads and checks every line without writing anything (nor opening the queue), so input that would be
    /// refused is refused with nothing enqueued (as when it was one transaction). Returns what it encoded, within
    /// `NDJSONCheckedLines.budgetBytes`, for `run` to write without parsing those lines again.
    static func check(_ input: NDJSONInput, deadLetterInvalid: Bool) throws -> NDJSONCheckedLines {
        var checked = NDJSONCheckedLines()
        let now = WallClock.nowMilliseconds()
        var position = input.position
        while let (line, text) = try input.next() {
            let record = try parse(text, line: line, deadLetterInvalid: deadLetterInvalid)
            let encoded = try located(line: line) { () throws(QueueError) in
                try QueueBatch.encodeOrCheck(
                    record, orDeadLetter: deadLetterInvalid, context: "line \(line): ", now: now)
            }
            if checked.keeping {
                checked.keep(line: line, encoded: encoded, text: text, startingAt: position)
                position = input.position
            }
        }
        return checked
    }

    /// Enqueues the whole input, checked by `check` first: the lines it kept as they were encoded, then (past its
    /// budget) the rest read again, in transactions of `recordsPerTransaction` records (the default, or all of
    /// them with `--one-transaction`).
    ///
    /// What this keeps of "all or nothing": a line that breaks a rule (or names no user) refuses the whole input,
    /// nothing written. What it does not: a failure while writing (the disk fills, the process is killed, another
    /// process holds the lock beyond the busy timeout) leaves the transactions committed before it queued; the
    /// error then says how many records and which lines were enqueued, and their ids are printed as usual. Records
    /// with idempotency keys can simply be enqueued again (the keys already queued are not written twice).
    static func run(
        input: NDJSONInput, checked: NDJSONCheckedLines, writer: QueueWriter, deadLetterInvalid: Bool,
        recordsPerTransaction: Int
    ) throws -> Result {
        var result = Result()
        var lastLine = 0
        var atEnd = false
        var keptIndex = 0
        var readingInput = false
        /// The next line to write: a kept one while there are any, then the input from where the check stopped
        /// keeping. `nil` at the end.
        func nextLine() throws -> (line: Int, encoded: EncodedRecord?, text: String)? {
            if !readingInput {
                if keptIndex < checked.count {
                    let entry = checked.entry(keptIndex)
                    keptIndex += 1
                    return (entry.line, entry.encoded, entry.deadLetterText ?? "")
                }
                guard let resume = checked.resumeAt else { return nil }
                try input.seek(to: resume)
                readingInput = true
            }
            guard let (line, text) = try input.next() else { return nil }
            return (line, nil, text)
        }
        while !atEnd {
            // A chunk's ids count only once it commits: a chunk that fails is rolled back whole.
            var chunk = Result()
            do {
                lastLine = try writer.batch { batch in
                    var (count, last) = (0, lastLine)
                    defer {
                        // A refusal leaves the rest of the input unstored too: counted refused with the chunk.
                        if batch.isRefused {
                            while (try? nextLine()) != nil { batch.countUnstored() }
                        }
                    }
                    while count < recordsPerTransaction {
                        guard let (line, encoded, text) = try nextLine() else {
                            atEnd = true
                            break
                        }
                        let outcome: BatchOutcome
                        if let encoded {
                            outcome = try located(line: line) { () throws(QueueError) in try batch.enqueue(encoded) }
                        } else {
                            let record = try parse(text, line: line, deadLetterInvalid: deadLetterInvalid)
                            outcome = try located(line: line) { () throws(QueueError) -> BatchOutcome in
                                deadLetterInvalid
                                    ? try batch.enqueueOrDeadLetter(record, context: "line \(line): ")
                                    : try batch.enqueue(record)
                            }
                        }
                        chunk.append(outcome.id)
                        if case .deadLettered(let id, let reason) = outcome {
                            chunk.deadLettered += 1
                            if chunk.deadReasons.count < Result.reasonsShown {
                                chunk.deadReasons.append((id, reason))
                            }
                        }
                        (count, last) = (count + 1, line)
                    }
                    return last
                }
                result.append(contentsOf: chunk)
                // SQLite's locks are not queued: leave the lock free for a moment, or a writer waiting for it
                // (`WriteGate` polls every 0.3-0.9 ms) may keep missing the instant between two chunks.
                if !atEnd { usleep(Self.pauseBetweenTransactionsMicroseconds) }
            } catch {
                guard lastLine > 0 else { throw error }
                // Part of the input is queued: say which, and print those ids as a success would.
                let enqueued = result.idRanges.reduce(0) { $0 + $1.count }
                result.print()
                writeStandardError(
                    "queuectl: error: the input changed or the write failed after \(enqueued) records (lines 1-\(lastLine)) "
                        + "were enqueued (their ids are on stdout); the lines after \(lastLine) were not\n")
                throw error
            }
        }
        return result
    }

    /// One line as a record; a line that is not one refuses the input.
    private static func parse(_ text: String, line: Int, deadLetterInvalid: Bool) throws -> Record {
        do throws(ValidationError) {
            return try Record(jsonLine: text)
        } catch {
            var located = error
            located.line = line
            let note =
                deadLetterInvalid ? " (a line that is not a record cannot be set aside as a dead letter)" : ""
            throw fail(located.description + note + "; nothing was enqueued", status: ExitStatus.invalidInput)
        }
    }

    /// Runs `body` for line `line`, turning its refusal into the message (with the line) and exit status.
    private static func located<T>(line: Int, _ body: () throws(QueueError) -> T) throws -> T {
        do throws(QueueError) {
            return try body()
        } catch {
            if case .invalidRecord(var validation) = error {
                validation.line = line
                throw fail(validation.description + "; nothing was enqueued", status: ExitStatus.invalidInput)
            }
            if case .invalidIdempotencyKey = error {
                throw fail("line \(line): \(error.description); nothing was enqueued", status: ExitStatus.invalidInput)
            }
            throw fail(error)
        }
    }
}
