/// The writer side of a queue: what an extension process links to record analytics safely.
///
/// Each enqueue is one `INSERT` (a batch is one transaction), never a read-modify-write of shared state, so
/// concurrent writers cannot lose each other's records, and a writer never waits for the consumer beyond
/// SQLite's own short write lock. Opening starts no threads and does no networking.
///
/// A `QueueWriter` is meant for one thread at a time; open one per thread (opening is cheap).
public final class QueueWriter {
    let file: QueueFile

    /// Opens the queue at `path`, creating it (mode 0660) and its schema if needed.
    public init(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) {
        file = try QueueFile(path: path, options: options)
    }

    /// The path of the queue file.
    public var path: String { file.path }

    /// Checks and appends one record; returns its id. With an idempotency key the same user already used for
    /// this record (queued, dead, or delivered recently) nothing is written and the existing record's id is
    /// returned; for a different record of that user it throws `idempotencyKeyReused`. Another user's record with
    /// the same key is a record of its own (docs/SCHEMA.md, "Idempotency keys").
    ///
    /// Under the size limit the daemon recorded (`QueueLimits`): with `refuse`, a record that would take the file
    /// past it is not stored and `queueFull` is thrown (the refusal counted in the file); with `drop-oldest`, the
    /// oldest dead letters and pending records are deleted in this transaction to make room (`SpaceKeeper`).
    @discardableResult
    public func enqueue(_ record: Record) throws(QueueError) -> Int64 {
        try enqueue(Self.encode(record, now: WallClock.nowMilliseconds()))
    }

    /// Appends a record already checked and encoded (`encode`): `queuectl enqueue` checks before it opens the file,
    /// so that a refused record creates no queue, and must not check twice.
    @discardableResult
    package func enqueue(_ encoded: EncodedRecord) throws(QueueError) -> Int64 {
        try file.checkFreeSpaceReserve()
        // One transaction also for a keyed insert's two statements (insert, or find the existing id), so that a
        // purge or an expiring key between them cannot leave this writer without an id.
        let file = self.file
        return try file.connection.write("enqueueing") { () throws(QueueError) -> LimitedWrite<Int64, QueueError> in
            guard let keeper = try SpaceKeeper.begin(file, expecting: (1, encoded.payload.count)) else {
                return .stored(try insert(encoded).id)
            }
            let outcome = try insert(encoded)
            if outcome.isNew { _ = try keeper.admit(newRow: outcome.id, payloadBytes: encoded.payload.count) }
            if let refusal = try keeper.finish() { return .refused(refusal) }
            return .stored(outcome.id)
        }.get()
    }

    /// Checks every record, then appends all of them in one transaction, or none: a rejected record makes the
    /// whole batch fail with an error naming its index. Returns the ids in input order.
    @discardableResult
    public func enqueue(contentsOf records: [Record]) throws(QueueError) -> [Int64] {
        let now = WallClock.nowMilliseconds()
        var encoded: [EncodedRecord] = []
        encoded.reserveCapacity(records.count)
        for (index, record) in records.enumerated() {
            do {
                encoded.append(try Self.encode(record, now: now))
            } catch {
                if case .invalidRecord(var validation) = error {
                    validation.index = index
                    throw QueueError.invalidRecord(validation)
                }
                throw error
            }
        }
        return try enqueue(encoded: encoded)
    }

    /// `RecordEncoder.encode` (validation, defaults, serialization), refusals thrown as `QueueError`.
    package static func encode(_ record: Record, now: Int64) throws(QueueError) -> EncodedRecord {
        do {
            return try RecordEncoder.encode(record, now: now)
        } catch {
            throw QueueError(error)
        }
    }

    /// Appends already-encoded records in one transaction. Under a size limit each record is measured as it is
    /// appended (so a batch larger than the limit never grows the file past it); a refusal refuses the whole
    /// batch, every record of it not already stored counted refused.
    func enqueue(encoded: [EncodedRecord]) throws(QueueError) -> [Int64] {
        guard !encoded.isEmpty else { return [] }
        try file.checkFreeSpaceReserve()
        let file = self.file
        return try file.connection.write("enqueueing a batch") {
            () throws(QueueError) -> LimitedWrite<[Int64], QueueError> in
            let payloadBytes = encoded.reduce(0) { $0 + $1.payload.count }
            let keeper = try SpaceKeeper.begin(file, expecting: (encoded.count, payloadBytes))
            var ids: [Int64] = []
            ids.reserveCapacity(encoded.count)
            for record in encoded {
                let outcome = try insert(record)
                ids.append(outcome.id)
                if let keeper, outcome.isNew,
                    try !keeper.admit(newRow: outcome.id, payloadBytes: record.payload.count)
                {
                    break
                }
            }
            if let refusal = try keeper?.finish(notOffered: encoded.count - ids.count) { return .refused(refusal) }
            return .stored(ids)
        }.get()
    }

    /// Closes the connection now rather than at deinit. The last connection to close removes the `-wal`.
    public func close() {
        file.close()
    }

    private func insert(_ record: EncodedRecord) throws(QueueError) -> RecordInsert.Outcome {
        try RecordInsert.insert(
            file.connection, hasUserKeys: file.hasUserKeys, kind: record.kind, payload: record.payload,
            createdAt: record.createdAtMilliseconds, key: record.idempotencyKey, scope: record.keyScope)
    }
}
