import NIOCore
import Synchronization

/// Bounds the control socket's connections (issue 13, item 5), so idle clients cannot exhaust the file table:
/// - at most `capacity` connections are open at once, well below any sensible `ulimit -n`, so `accept` never
///   meets `EMFILE`;
/// - a connection must deliver its whole request within `requestTimeout` (idle and slowloris clients are closed);
/// - when the cap is reached, the oldest connection still waiting for its request is closed to make room, so a
///   launch (whose request arrives at once) keeps working however many idle connections others open. Only when
///   every open connection is busy (streaming a `?wait=true` pass) is the newcomer closed instead.
final class ConnectionLimiter: Sendable {
    let capacity = 64
    let requestTimeout: Duration = .seconds(10)

    private struct Entry {
        var channel: any Channel
        var hasRequest: Bool
    }

    private struct State {
        var next: UInt64 = 0
        /// By admission number, so the first key is the oldest.
        var open: [UInt64: Entry] = [:]
    }

    private let state = Mutex(State())

    /// Admits `channel`, closing the oldest idle connection when full; `nil` (and `channel` closed) when every
    /// open connection is busy.
    func admit(_ channel: any Channel) -> UInt64? {
        let (ticket, victim): (UInt64?, (any Channel)?) = state.withLock { state in
            var victim: (any Channel)?
            if state.open.count >= capacity {
                guard let oldest = state.open.filter({ !$0.value.hasRequest }).keys.min() else {
                    return (nil, channel)
                }
                victim = state.open.removeValue(forKey: oldest)?.channel
            }
            state.next += 1
            state.open[state.next] = Entry(channel: channel, hasRequest: false)
            return (state.next, victim)
        }
        victim?.close(promise: nil)
        return ticket
    }

    /// The request arrived whole: from now on the connection is busy, never evicted or timed out.
    func requestReceived(_ ticket: UInt64) {
        state.withLock { $0.open[ticket]?.hasRequest = true }
    }

    /// Closes the connection if its request has not arrived (called when `requestTimeout` has passed).
    func expire(_ ticket: UInt64) {
        let channel: (any Channel)? = state.withLock { state in
            guard let entry = state.open[ticket], !entry.hasRequest else { return nil }
            state.open[ticket] = nil
            return entry.channel
        }
        channel?.close(promise: nil)
    }

    func release(_ ticket: UInt64) {
        state.withLock { _ = $0.open.removeValue(forKey: ticket) }
    }
}
