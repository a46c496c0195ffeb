import EventQueue
import Synchronization

@testable import EventQueueDelivery

/// A drain clock that moves only when the test says so: `advance(by:)` moves the wall and the monotonic side
/// together and wakes every sleeper whose deadline has come. Tests wait for sleepers (`waitForSleepers`) instead
/// of sleeping: a lease-renewal loop or a retry timer that goes back to sleep is the event "it has done its work".
final class ManualClock: DrainClock {
    private enum Sleeper {
        case waiting(deadline: Duration, continuation: CheckedContinuation<Void, any Error>)
        /// Cancelled before it got to register its continuation.
        case cancelled
    }

    private struct State {
        var wall: Int64
        var monotonic = Duration.zero
        var nextID: UInt64 = 0
        var sleepers: [UInt64: Sleeper] = [:]
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        var waiting: Int {
            sleepers.values.count(where: { if case .waiting = $0 { true } else { false } })
        }

        /// The watchers satisfied now, removed from the list.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let count = waiting
            let ready = watchers.filter { $0.count <= count }.map(\.continuation)
            watchers.removeAll { $0.count <= count }
            return ready
        }
    }

    private let state: Mutex<State>

    /// Starts at the real wall-clock time, so times stored by writers (created_at_ms) stay plausible.
    init(wallMilliseconds: Int64 = WallClock.nowMilliseconds()) {
        state = Mutex(State(wall: wallMilliseconds))
    }

    func wallMilliseconds() -> Int64 { state.withLock { $0.wall } }

    func monotonic() -> Duration { state.withLock { $0.monotonic } }

    /// The monotonic side, as the boot clock of one simulated boot.
    func bootClock() -> BootClockReading {
        BootClockReading(bootID: "manual-clock", milliseconds: monotonic().wholeMilliseconds)
    }

    /// Steps the wall clock alone, by `milliseconds` (negative: back), as NTP or an administrator does: the
    /// monotonic side does not move and no sleeper wakes.
    func stepWall(by milliseconds: Int64) {
        state.withLock { $0.wall += milliseconds }
    }

    func sleep(for duration: Duration) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, watchers) = state.withLock {
                    state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if case .cancelled = state.sleepers[id] {
                        state.sleepers[id] = nil
                        return (.failure(CancellationError()), [])
                    }
                    if duration <= .zero { return (.success(()), []) }
                    state.sleepers[id] = .waiting(deadline: state.monotonic + duration, continuation: continuation)
                    return (nil, state.satisfiedWatchers())
                }
                for watcher in watchers { watcher.resume() }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiting = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                switch state.sleepers[id] {
                case .waiting(_, let continuation):
                    state.sleepers[id] = nil
                    return continuation
                case .cancelled, nil:
                    state.sleepers[id] = .cancelled
                    return nil
                }
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// Moves both clocks forward and wakes the sleepers now due, earliest first.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.monotonic += duration
            state.wall += duration.wholeMilliseconds
            var due: [(Duration, UInt64, CheckedContinuation<Void, any Error>)] = []
            for (id, sleeper) in state.sleepers {
                if case .waiting(let deadline, let continuation) = sleeper, deadline <= state.monotonic {
                    due.append((deadline, id, continuation))
                }
            }
            for (_, id, _) in due { state.sleepers[id] = nil }
            return due.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        }
        for continuation in due { continuation.resume() }
    }

    /// Moves the clocks to wall-clock time `milliseconds` (no step back).
    func advance(toWallMilliseconds milliseconds: Int64) {
        let now = wallMilliseconds()
        if milliseconds > now { advance(by: .milliseconds(milliseconds - now)) }
    }

    /// Sleepers waiting now.
    var sleepers: Int { state.withLock { $0.waiting } }

    /// Returns once at least `count` sleepers wait: whatever was to go to sleep has done so.
    func waitForSleepers(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.waiting >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
