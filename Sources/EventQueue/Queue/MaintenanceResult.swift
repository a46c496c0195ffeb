/// What a maintenance run did.
public struct MaintenanceResult: Sendable, Hashable {
    /// The `-wal` file's size before the checkpoint.
    public var walBytesBefore: Int64
    /// The `-wal` file's size after it (0 once truncated).
    public var walBytesAfter: Int64
    /// The queue file's size before the vacuum.
    public var databaseBytesBefore: Int64
    /// The queue file's size after it: the pages of delivered records returned to the filesystem.
    public var databaseBytesAfter: Int64
    /// False when a reader kept the checkpoint from finishing; it is retried at the next drain.
    public var checkpointComplete: Bool
}
