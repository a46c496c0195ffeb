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
        return try file.connection.write("enqueueing") { () throws(QueueError) in try insert(encoded) }
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

    /// Appends already-encoded records in one transaction.
    func enqueue(encoded: [EncodedRecord]) throws(QueueError) -> [Int64] {
        guard !encoded.isEmpty else { return [] }
        try file.checkFreeSpaceReserve()
        return try file.connection.write("enqueueing a batch") { () throws(QueueError) in
            var ids: [Int64] = []
            ids.reserveCapacity(encoded.count)
            for record in encoded { ids.append(try insert(record)) }
            return ids
        }
    }

    /// Closes the connection now rather than at deinit. The last connection to close removes the `-wal`.
    public func close() {
        file.close()
    }

    private func insert(_ record: EncodedRecord) throws(QueueError) -> Int64 {
        let outcome = try RecordInsert.insert(
            file.connection, hasUserKeys: file.hasUserKeys, kind: record.kind, payload: record.payload,
            createdAt: record.createdAtMilliseconds, key: record.idempotencyKey, scope: record.keyScope)
        switch outcome {
        case .inserted(let id), .alreadyKnown(let id): return id
        }
    }
}
