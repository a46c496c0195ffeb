import Synchronization

/// The lease of the delivery a task sends for, as its requests see it: when it ends, whose it is, and whether one
/// of its requests went without an answer (then its users' erasures are held: `InFlightLeases.holdUsers`).
///
/// A drainer stopped past its lease (SIGSTOP, a frozen VM) may resume after `forget` deleted the user at Braze,
/// and a request sent then would make a new profile: so nothing is sent past the end. The end is monotonic (a
/// resumed process finds it passed whatever the wall clock did) and read before the claim or renewal (never later
/// than the lease's end in the file).
public final class DeliveryLease: Sendable {
    /// The lease of the delivery the current task sends for (bound by `LeasedDelivery`); `nil` outside one.
    @TaskLocal public static var current: DeliveryLease?

    /// The consumer that holds the lease (its token before `#`).
    public let consumer: String
    private let state: Mutex<(end: ContinuousClock.Instant, unanswered: Bool)>

    public init(consumer: String, end: ContinuousClock.Instant) {
        self.consumer = consumer
        state = Mutex((end, false))
    }

    /// The lease's end as known now.
    public var end: ContinuousClock.Instant { state.withLock { $0.end } }

    /// The time left before the end, or `nil` once it has passed: then nothing more may be sent.
    public func remaining() -> Duration? {
        let left = end - ContinuousClock.now
        return left > .zero ? left : nil
    }

    /// A request of the delivery went without an answer Braze is known to have applied nothing under.
    public func noteUnansweredRequest() {
        state.withLock { $0.unanswered = true }
    }

    public var hadUnansweredRequest: Bool { state.withLock { $0.unanswered } }

    /// A renewal that kept every record of the delivery moves the end later (never earlier).
    func extend(to later: ContinuousClock.Instant) {
        state.withLock { $0.end = max($0.end, later) }
    }
}
