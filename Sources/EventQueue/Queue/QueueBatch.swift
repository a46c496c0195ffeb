/// What one entry of a batch became.
public enum BatchOutcome: Sendable, Hashable {
    /// A new pending record.
    case enqueued(id: Int64)
    /// A new dead letter: the entry broke a rule and was set aside with its reason instead of refusing the batch.
    case deadLettered(id: Int64, reason: String)
    /// Its user already used its idempotency key for this record: nothing was written.
    case alreadyKnown(id: Int64)

    /// The record's id, new or existing.
    public var id: Int64 {
        switch self {
        case .enqueued(let id), .deadLettered(let id, _), .alreadyKnown(let id): return id
        }
    }
}

/// One open write transaction of a `QueueWriter`, handed to `QueueWriter.batch(_:)`'s body: input read piece by
/// piece is appended record by record (memory bounded by one record) and still commits or rolls back as one, and a
/// bad entry can be kept as a dead letter with its reason, so that one old entry neither blocks an import nor is lost.
public final class QueueBatch {
    let connection: Connection
    let now: Int64
    let hasUserKeys: Bool
    var keeper: SpaceKeeper?

    init(connection: Connection, now: Int64, hasUserKeys: Bool) {
        self.connection = connection
        self.now = now
        self.hasUserKeys = hasUserKeys
    }

    /// Whether the size limit refused this batch: nothing of it will be stored.
    package var isRefused: Bool { keeper?.refusal != nil }

    /// Counts one more record the refused batch leaves unstored without offering it (the rest of an input read
    /// piece by piece: `queuectl enqueue --ndjson`), so that `dropped.refused` counts every record not stored.
    package func countUnstored() {
        keeper?.offeredAfterTheRefusal()
    }

    /// Checks and appends one record (as `QueueWriter.enqueue`); the caller decides what an error ends.
    public func enqueue(_ record: Record) throws(QueueError) -> BatchOutcome {
        try enqueue(QueueWriter.encode(record, now: now))
    }

    /// Appends a record `QueueBatch.encodeOrCheck` already checked and encoded, stamped with this batch's time, so
    /// that `queuectl enqueue --ndjson` does not encode every line twice.
    package func enqueue(_ encoded: EncodedRecord) throws(QueueError) -> BatchOutcome {
        try insert(
            kind: encoded.kind, payload: encoded.payload, key: encoded.idempotencyKey, scope: encoded.keyScope,
            deadReason: nil)
    }

    /// Appends `record` as a dead letter (`last_error` = `reason`) without checking Braze's rules (`dead retry`
    /// makes it pending once it passes). The file still requires a JSON object naming a user (else
    /// `invalidRecord`); an invalid idempotency key is dropped, and the reason says so.
    public func deadLetter(_ record: Record, reason: String) throws(QueueError) -> BatchOutcome {
        try Self.checkDeadLetter(record, reason: reason)
        var reason = reason
        var key = record.idempotencyKey
        if let candidate = key, !IdempotencyKey.isValid(candidate) {
            key = nil
            reason += " (its idempotency key was invalid and was dropped)"
        }
        let scope = key == nil ? nil : IdempotencyKey.scope(of: record)
        var payload: [UInt8] = []
        payload.reserveCapacity(256)
        record.object.serialize(into: &payload)
        if payload.count > RecordEncoder.maximumPayloadBytes, let user = UserIdentity(filing: record.object) {
            // The file bounds every payload (migration 6): keep whose it was and how large, not the whole entry.
            reason +=
                " (its payload of \(payload.count) bytes is more than the \(RecordEncoder.maximumPayloadBytes) a "
                + "record can be: kept as a stub naming its user)"
            let stub = JSONObject(members: [
                user.brazeMember,
                .init(key: "eventqueue_dropped_payload_bytes", value: .number(JSONNumber(payload.count))),
            ])
            payload.removeAll(keepingCapacity: true)
            stub.serialize(into: &payload)
        }
        return try insert(kind: record.kind, payload: payload, key: key, scope: scope, deadReason: reason)
    }

    /// Appends `record` when it passes the checks, else keeps it as a dead letter (`context` prefixes the reason).
    public func enqueueOrDeadLetter(_ record: Record, context: String = "") throws(QueueError) -> BatchOutcome {
        do {
            return try enqueue(record)
        } catch {
            guard let reason = Self.deadLetterReason(error, context: context) else { throw error }
            return try deadLetter(record, reason: reason)
        }
    }

    /// The dead letter's reason for a record `error` refused, or `nil` when the error is not the record's rules.
    private static func deadLetterReason(_ error: QueueError, context: String) -> String? {
        switch error {
        case .invalidRecord(var validation):
            validation.index = nil
            validation.line = nil
            return context + validation.description
        case .invalidIdempotencyKey:
            return context + error.description
        default:
            return nil
        }
    }

    /// Checks `record` as `enqueue` (or, with `orDeadLetter`, `enqueueOrDeadLetter`) would, writing nothing: a caller
    /// that writes in several transactions checks the whole input first, so it is refused before any is written.
    public static func check(_ record: Record, orDeadLetter: Bool, context: String = "") throws(QueueError) {
        _ = try encodeOrCheck(record, orDeadLetter: orDeadLetter, context: context, now: WallClock.nowMilliseconds())
    }

    /// `check`, returning what it encoded: the record as `enqueue(_: EncodedRecord)` appends it, or `nil` when
    /// (with `orDeadLetter`) it breaks a rule and would be kept as a dead letter.
    package static func encodeOrCheck(
        _ record: Record, orDeadLetter: Bool, context: String = "", now: Int64
    ) throws(QueueError) -> EncodedRecord? {
        do {
            return try QueueWriter.encode(record, now: now)
        } catch {
            guard orDeadLetter, let reason = deadLetterReason(error, context: context) else { throw error }
            try checkDeadLetter(record, reason: reason)
            return nil
        }
    }

    /// The one refusal of `deadLetter`: a record that names no user has no user to be filed under.
    static func checkDeadLetter(_ record: Record, reason: String) throws(QueueError) {
        guard UserIdentity(filing: record.object) != nil else {
            throw QueueError.invalidRecord(
                ValidationError(
                    field: "record",
                    rule: "names no user, so it cannot be kept as a dead letter either (\(reason))"))
        }
    }

    /// Appends one row; under a size limit measures after it, and once the batch cannot stay within the limit
    /// throws `queueFull` for this and every later record (`QueueWriter.batch` then commits the refusal alone).
    private func insert(
        kind: RecordKind, payload: [UInt8], key: String?, scope: KeyScope?, deadReason: String?
    ) throws(QueueError) -> BatchOutcome {
        if let keeper, let refusal = keeper.refusal {
            keeper.offeredAfterTheRefusal()
            throw refusal
        }
        let outcome = try RecordInsert.insert(
            connection, hasUserKeys: hasUserKeys, kind: kind, payload: payload, createdAt: now, key: key,
            scope: scope, deadReason: deadReason)
        if let keeper, outcome.isNew, try !keeper.admit(newRow: outcome.id, payloadBytes: payload.count),
            let refusal = keeper.refusal
        {
            throw refusal
        }
        return outcome
    }
}

extension QueueWriter {
    /// Runs `body` inside one write transaction and commits what it appended, or nothing if it throws (its own
    /// error, or a `QueueError`, is rethrown). For inputs read piece by piece; see `QueueBatch`.
    ///
    /// The write lock is held while `body` runs: read from a file or a spool inside it, not from a slow producer.
    ///
    /// Under a size limit (`QueueLimits`), with `refuse` the first record that does not fit refuses the whole
    /// transaction: nothing is kept, its records are counted refused, and the batch throws (the body's own error,
    /// else the `queueFull`) whatever the body did with it. With `drop-oldest` older records make room, never the
    /// batch's own: a batch that does not fit even so is refused whole.
    public func batch<T>(_ body: (QueueBatch) throws -> T) throws -> T {
        try batch(countingRefusal: true, body)
    }

    /// `batch`; with `countingRefusal` false a refusal rolls back its count too, so that a dry run that throws to
    /// roll back (`queuectl import-legacy --dry-run`) changes nothing, `queue_drops` included.
    package func batch<T>(countingRefusal: Bool, _ body: (QueueBatch) throws -> T) throws -> T {
        try file.checkFreeSpaceReserve()
        let file = self.file
        let connection = file.connection
        let batch = QueueBatch(connection: connection, now: WallClock.nowMilliseconds(), hasUserKeys: file.hasUserKeys)
        return try connection.write(
            "enqueueing a batch",
            rethrowing: { () throws -> Result<T, any Error> in
                batch.keeper = try SpaceKeeper.begin(file)
                let value: T
                do {
                    value = try body(batch)
                } catch {
                    // A refusal ends the batch whatever error the body made of it: its count commits, then that error.
                    if countingRefusal, let keeper = batch.keeper, keeper.refusal != nil, try keeper.finish() != nil {
                        return .failure(error)
                    }
                    throw error
                }
                if let refusal = batch.keeper?.refusal, !countingRefusal { throw refusal }
                if let refusal = try batch.keeper?.finish() { return .failure(refusal) }
                return .success(value)
            }
        ).get()
    }
}
