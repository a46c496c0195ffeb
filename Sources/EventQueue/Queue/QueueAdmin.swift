/// The operator's side of a queue: what `queuectl status`, `peek` and `dead` read and change, and the upkeep
/// after a drain pass (old keys, vacuum, WAL truncation). Use from one thread at a time.
///
/// Apart from `QueueConsumer` so that the lease protocol a crash must not break reads on its own, and an admin
/// needs no consumer identity or lease. The daemon's consumer hands out one on its own connection (`admin`).
public final class QueueAdmin {
    let file: QueueFile
    /// False when the file belongs to a consumer: closing is the consumer's business then.
    private let ownsFile: Bool

    /// Opens the queue at `path` for administration, with the full schema check as for a consumer.
    public init(path: String, options: QueueOptions = QueueOptions()) throws(QueueError) {
        file = try QueueFile(path: path, options: options, role: .consumer)
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
    /// The admin side on this consumer's connection: the drain loop's counts, its upkeep, the daemon's status.
    public var admin: QueueAdmin { QueueAdmin(sharing: file) }
}
