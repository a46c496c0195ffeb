/// The operator's side of a queue: what `queuectl status`, `peek` and `dead` read and change (counts, live
/// records, dead letters), and the upkeep after a drain pass (forgetting old keys, vacuum, WAL truncation).
///
/// Why apart from `QueueConsumer`: the consumer is the lease protocol and nothing else (claim, ack, nack, reject,
/// renew, release, the drain lock), so the protocol a crash must not break reads on its own. An admin needs no
/// consumer identity, no lease and no claim cache: `queuectl status` opens this, not a consumer. The daemon's
/// consumer hands out an admin on its own connection (`QueueConsumer.admin`), so the drain loop's counts and upkeep
/// run on the connection it already has.
///
/// Use from one thread at a time, as the consumer.
public final class QueueAdmin {
    let file: QueueFile
    /// False when the file belongs to a consumer: closing is the consumer's business then.
    private let ownsFile: Bool

    /// Opens the queue at `path` for administration: the full schema check (a planted trigger is refused), as for
    /// a consumer.
    public init(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) {
        file = try QueueFile(path: path, options: options, schemaCheck: .full)
        ownsFile = true
    }

    init(sharing file: QueueFile) {
        self.file = file
        ownsFile = false
    }

    /// The queue file's path.
    public var path: String { file.path }

    /// Closes the connection (unless it is a consumer's, which closes it itself).
    public func close() {
        if ownsFile { file.close() }
    }
}

extension QueueConsumer {
    /// The admin side on this consumer's connection: the drain loop's counts after a pass, its upkeep, the
    /// daemon's status.
    public var admin: QueueAdmin { QueueAdmin(sharing: file) }
}
