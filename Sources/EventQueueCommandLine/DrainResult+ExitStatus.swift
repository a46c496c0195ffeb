import EventQueueDelivery

extension DrainResult {
    /// The exit status `queuectl drain` reports for a pass's result (from the one table, `ExitStatus`): the
    /// drain loop decides the result, the command line decides what a shell sees.
    public var exitStatus: ExitStatus {
        switch self {
        case .allDelivered: return .success
        case .someDead: return .someDead
        case .recordsRemain: return .recordsRemain
        case .sinkMisconfigured: return .sinkMisconfigured
        case .anotherDrainerRunning: return .anotherDrainerRunning
        }
    }

    /// `exitStatus` as the value a process exits with.
    public var exitCode: Int32 { exitStatus.rawValue }
}
