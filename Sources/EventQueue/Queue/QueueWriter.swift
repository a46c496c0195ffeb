/// The writer side of a queue: what an extension process links to record analytics safely. Each enqueue is one
/// `INSERT`, never a read-modify-write of shared state, so concurrent writers cannot lose each other's records.
/// Opening starts no threads and does no networking. One thread at a time; open one per thread (it is cheap).
public final class QueueWriter {
    let file: QueueFile

    /// Opens the queue at `path`, creating it (mode 0660) and its schema if needed.
    public init(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) {
        file = try QueueFile(path: path, options: options)
    }

    /// The path of the queue file.
    public var path: String { file.path }

    /// Checks and appends one record; returns its id. An idempotency key the same user already used for this
    /// record (queued, dead, or delivered recently) writes nothing and returns the existing id; for a different
    /// record of that user it throws `idempotencyKeyReused` (docs/SCHEMA.md, "Idempotency keys"). Over the size
    /// limit (`QueueLimits`), `refuse` throws `queueFull` and `drop-oldest` makes room (`SpaceKeeper`).
    @discardableResult
    public func enqueue(_ record: Record) throws(QueueError) -> Int64 {
        try enqueue(Self.encode(record, now: WallClock.nowMilliseconds()))
    }

    /// Appends a record already checked and encoded (`encode`), as `queuectl enqueue` does before it opens the file.
    @discardableResult
    package func enqueue(_ encoded: EncodedRecord) throws(QueueError) -> Int64 {
        try file.checkFreeSpaceReserve()
        // One transaction for a keyed insert's two statements: a purge between them cannot leave it without an id.
        let file = self.file
        return try file.connection.write("enqueueing") { () throws(QueueError) -> Result<Int64, QueueError> in
            guard let keeper = try SpaceKeeper.begin(file, expecting: (1, encoded.payload.count)) else {
                return .success(try insert(encoded).id)
            }
            let outcome = try insert(encoded)
            if outcome.isNew { _ = try keeper.admit(newRow: outcome.id, payloadBytes: encoded.payload.count) }
            if let refusal = try keeper.finish() { return .failure(refusal) }
            return .success(outcome.id)
        }.get()
    }

    /// Checks every record, then appends all in one transaction, or none (the error names the index). Returns ids.
    /// Under a size limit a refusal refuses the whole batch.
    @discardableResult
    public func enqueue(contentsOf records: [Record]) throws(QueueError) -> [Int64] {
        guard !records.isEmpty else { return [] }
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
        try file.checkFreeSpaceReserve()
        let file = self.file
        return try file.connection.write("enqueueing a batch") {
            () throws(QueueError) -> Result<[Int64], QueueError> in
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
            if let refusal = try keeper?.finish(notOffered: encoded.count - ids.count) { return .failure(refusal) }
            return .success(ids)
        }.get()
    }

    /// `RecordEncoder.encode` (validation, defaults, serialization), refusals thrown as `QueueError`.
    package static func encode(_ record: Record, now: Int64) throws(QueueError) -> EncodedRecord {
        do {
            return try RecordEncoder.encode(record, now: now)
        } catch {
            throw QueueError(error)
        }
    }

    /// Closes the connection now rather than at deinit. The last connection to close removes the `-wal`.
    public func close() {
        file.close()
    }

    private func insert(_ record: EncodedRecord) throws(QueueError) -> BatchOutcome {
        try RecordInsert.insert(
            file.connection, hasUserKeys: file.hasUserKeys, kind: record.kind, payload: record.payload,
            createdAt: record.createdAtMilliseconds, key: record.idempotencyKey, scope: record.keyScope)
    }
}
