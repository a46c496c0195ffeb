import EventQueue
import Logging
import Synchronization

/// The one `SinkAvailability` of a drainer, shared by its passes (an outage spans many), the launch coordinator
/// and the daemon's status and metrics. It reads the drainer's injected clock and logs each change of state once.
public final class SinkAvailabilityMonitor: Sendable {
    private let state: Mutex<SinkAvailability>
    private let clock: any DrainClock
    private let logger: Logger

    public init(
        policy: SinkAvailability.Policy = SinkAvailability.Policy(), clock: any DrainClock, logger: Logger,
        seed: UInt64 = UInt64.random(in: 0...UInt64.max)
    ) {
        self.clock = clock
        self.logger = logger
        state = Mutex(SinkAvailability(policy: policy, at: clock.moment(), seed: seed))
    }

    public var snapshot: SinkAvailability.Snapshot { state.withLock { $0.snapshot } }

    /// Whether the sink is unavailable now.
    @available(*, deprecated, message: "use snapshot.state == .unavailable; kept for 1.3.0's callers, goes in 2.0")
    public var isUnavailable: Bool { snapshot.state == .unavailable }

    /// What the drain loop may do now.
    public func admission() -> SinkAvailability.Admission {
        let now = clock.moment()
        return state.withLock { $0.admission(at: now) }
    }

    /// A launch: the next probe goes now (or `probeSpacing` after the last one). Nothing while available.
    public func requestProbe() {
        let now = clock.moment()
        state.withLock { $0.requestProbe(at: now) }
    }

    /// How long until the next probe may go, while unavailable; `nil` while available.
    public func untilNextProbe() -> Duration? {
        let now = clock.monotonic()
        return state.withLock { $0.nextProbeAt }.map { max(.zero, $0 - now) }
    }

    func passStarting() {
        state.withLock { $0.passStarting() }
    }

    func probeStarted() {
        let now = clock.moment()
        state.withLock { $0.probeStarted(at: now) }
        logger.debug("probing the sink")
    }

    /// A probe was due and nothing was claimable (see `SinkAvailability.nothingToProbe`).
    func nothingToProbe() {
        let now = clock.moment()
        if state.withLock({ $0.nothingToProbe(at: now) }) != nil {
            logger.info(
                "nothing left to probe the unavailable sink with; taking it as available until a delivery fails")
        }
    }

    /// Learns from one settled delivery, and logs a change of state.
    func record(_ signal: SinkAvailability.Signal) {
        let now = clock.moment()
        let (transition, snapshot) = state.withLock { state in (state.record(signal, at: now), state.snapshot) }
        switch transition {
        case .becameUnavailable?:
            logger.warning(
                "the sink is unavailable; its records wait, no attempt counted, until a probe gets an answer",
                metadata: [
                    "last_error": "\(snapshot.lastError ?? "?")", "failures_in_a_row": "\(snapshot.failuresInARow)",
                    "next_probe_in_ms": "\(snapshot.nextProbeAtMilliseconds.map { $0 - now.wallMilliseconds } ?? 0)",
                ])
        case .becameAvailable(let milliseconds, let probes)?:
            logger.info(
                "the sink is available again; delivering at full speed",
                metadata: ["unavailable_seconds": "\(Double(milliseconds) / 1000)", "probes": "\(probes)"])
        case nil:
            if signal.failure != nil {
                logger.debug(
                    signal.probe ? "the probe failed" : "a delivery to the sink failed; its records are due again now",
                    metadata: [
                        "reason": "\(signal.failure ?? "")", "failures_in_a_row": "\(snapshot.failuresInARow)",
                        "next_probe_in_ms":
                            "\(snapshot.nextProbeAtMilliseconds.map { "\($0 - now.wallMilliseconds)" } ?? "none")",
                    ])
            }
        }
    }

    /// Why the pass stops, while unavailable: the halt a pass ends with, which `drain --wait` shows.
    public func halt() -> SinkHalt? {
        let snapshot = self.snapshot
        guard snapshot.state == .unavailable else { return nil }
        var reason = "the sink is unavailable since \(ISO8601.format(unixMilliseconds: snapshot.sinceMilliseconds))"
        if let error = snapshot.lastError { reason += " (last error: \(error))" }
        if let next = snapshot.nextProbeAtMilliseconds {
            reason += "; next probe at \(ISO8601.format(unixMilliseconds: next))"
        }
        return SinkHalt(kind: .unavailable, reason: reason + "; records are kept and no attempt is counted")
    }
}
