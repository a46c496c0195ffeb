import EventQueue
import EventQueueCommandLine

/// What `enqueue --ndjson`'s check pass keeps for the write pass: each line's record as the check encoded it, up to
/// `budgetBytes`, and where the input resumes after the last line kept.
///
/// Why: the check pass parses, validates and serializes every line (it must, to refuse bad input before anything
/// is written), and the write pass did all of it again: profiled, the second parse and encode were a fifth of
/// `queuectl enqueue --ndjson`'s CPU (docs/PERFORMANCE.md, "Issue 34: the writers"). Keeping the encoded records
/// writes them as they are. Why a budget: an input of any size must still be enqueued in bounded memory; past the
/// budget the write pass reads the rest of the input again from `resumeAt`, as it read all of it before.
///
/// Why one byte arena rather than an `EncodedRecord` per line: each of those is four allocations and about 300
/// bytes besides its payload (measured: 100,000 records of 130 bytes took 39 MB); here a line costs its payload and
/// 32 bytes, and the arena grows in chunks, never copied.
struct NDJSONCheckedLines {
    /// The most the kept records may take, counted as `cost(payloadBytes:extraBytes:)`: 100,000 typical events
    /// (150 bytes of payload) take 18 MB.
    static let budgetBytes = 32 << 20

    /// A test seam, honoured by debug builds only: a smaller budget (in bytes), so that a test of a few lines
    /// goes through the rereading of the input past the budget.
    static let testBudgetVariable = "EVENTQUEUE_TEST_NDJSON_KEPT_BYTES"

    /// The arena's chunk: payloads are appended to the last chunk while they fit.
    private static let chunkBytes = 1 << 20

    /// One kept line: where its payload is in the arena, and its key or dead-letter text in `extras`, if any.
    private struct Kept {
        var line: Int
        var kind: RecordKind
        var chunk: Int32
        var offset: Int32
        var count: Int32
        /// Index in `extras`, or -1.
        var extra: Int32
    }

    /// What a few lines need besides a payload: a keyed record's key and scope, or the text of a line to set aside
    /// as a dead letter (`--dead-letter-invalid`; the write pass parses it again to file it with its reason).
    private enum Extra {
        case key(String, KeyScope?)
        case deadLetter(String)
    }

    private var kept: [Kept] = []
    private var chunks: [[UInt8]] = []
    private var extras: [Extra] = []
    /// Where the first line not kept begins; `nil` while every line read so far is kept.
    private(set) var resumeAt: NDJSONInput.Position?
    private var usedBytes = 0
    private let budgetBytes: Int

    /// Whether lines are still kept (the budget is not spent).
    var keeping: Bool { resumeAt == nil }

    var count: Int { kept.count }

    init() {
        var budget = Self.budgetBytes
        #if DEBUG
            if let text = QueueEnvironment.variable(Self.testBudgetVariable), let bytes = Int(text) { budget = bytes }
        #endif
        budgetBytes = budget
    }

    /// Keeps line `line`'s record as encoded, or (`encoded` nil) its `text` for a dead letter, if it fits in what
    /// is left of the budget; else stops keeping, the write pass to resume at `position` (where the line began).
    mutating func keep(line: Int, encoded: EncodedRecord?, text: String, startingAt position: NDJSONInput.Position) {
        guard keeping else { return }
        var extra: Extra?
        var extraBytes = 0
        if let encoded, let key = encoded.idempotencyKey {
            extra = .key(key, encoded.keyScope)
            extraBytes = key.utf8.count + (encoded.keyScope?.userKey.utf8.count ?? 0) + 64
        } else if encoded == nil {
            extra = .deadLetter(text)
            extraBytes = text.utf8.count + 32
        }
        let payload = encoded?.payload ?? []
        let cost = Self.cost(payloadBytes: payload.count, extraBytes: extraBytes)
        guard usedBytes + cost <= budgetBytes else {
            resumeAt = position
            return
        }
        usedBytes += cost
        if chunks.isEmpty || chunks[chunks.count - 1].count + payload.count > chunks[chunks.count - 1].capacity {
            var chunk: [UInt8] = []
            chunk.reserveCapacity(max(Self.chunkBytes, payload.count))
            chunks.append(chunk)
        }
        let chunk = chunks.count - 1
        let offset = chunks[chunk].count
        chunks[chunk].append(contentsOf: payload)
        if let extra { extras.append(extra) }
        kept.append(
            Kept(
                line: line, kind: encoded?.kind ?? .event, chunk: Int32(chunk), offset: Int32(offset),
                count: Int32(payload.count), extra: extra == nil ? -1 : Int32(extras.count - 1)))
    }

    /// The kept line at `index`: its number and its record as encoded (its payload copied out of the arena), or the
    /// line's text when it is to be set aside as a dead letter.
    func entry(_ index: Int) -> (line: Int, encoded: EncodedRecord?, deadLetterText: String?) {
        let item = kept[index]
        var key: String?
        var scope: KeyScope?
        if item.extra >= 0 {
            switch extras[Int(item.extra)] {
            case .deadLetter(let text): return (item.line, nil, text)
            case .key(let keyText, let keyScope): (key, scope) = (keyText, keyScope)
            }
        }
        let start = Int(item.offset)
        let payload = Array(chunks[Int(item.chunk)][start..<(start + Int(item.count))])
        return (
            item.line,
            EncodedRecord(
                kind: item.kind, payload: payload, createdAtMilliseconds: 0, idempotencyKey: key, keyScope: scope),
            nil
        )
    }

    /// A kept line's memory, about: its payload, its place in `kept`, and what `extras` holds for it.
    static func cost(payloadBytes: Int, extraBytes: Int) -> Int {
        payloadBytes + MemoryLayout<Kept>.stride + extraBytes
    }
}
