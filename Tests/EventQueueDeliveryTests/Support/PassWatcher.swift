import EventQueue
import Synchronization

@testable import EventQueueDelivery

/// A launch observer that records every pass end and lets a test wait for the n-th one: the event to await
/// instead of polling the coordinator's status.
final class PassWatcher: LaunchObserver {
    private struct State {
        var ends: [DrainSummary?] = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    func passFinished(_ summary: DrainSummary, duration: Duration) { ended(summary) }

    func passFailed(_ error: QueueError, duration: Duration) { ended(nil) }

    private func ended(_ summary: DrainSummary?) {
        let ready = state.withLock { state in
            state.ends.append(summary)
            let count = state.ends.count
            defer { state.waiters.removeAll { $0.count <= count } }
            return state.waiters.filter { $0.count <= count }.map(\.continuation)
        }
        for waiter in ready { waiter.resume() }
    }

    /// The summary of every pass that ended, in order (`nil` for a pass that failed on a queue error).
    var ends: [DrainSummary?] { state.withLock { $0.ends } }

    /// Returns once `count` passes have ended.
    func waitForPassEnds(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.ends.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
