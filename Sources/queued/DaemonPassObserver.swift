import EventQueue
import EventQueueDelivery

/// Turns the launch coordinator's pass events into the daemon's metrics and systemd status lines.
struct DaemonPassObserver: LaunchObserver {
    let metrics: DaemonMetrics
    let notifier: SystemdNotifier
    /// The drainer's sink availability: an unavailable sink is what `systemctl status` should say first.
    let availability: SinkAvailabilityMonitor

    func recordsInFlight(_ count: Int) {
        metrics.recordInFlight(count)
    }

    func passFinished(_ summary: DrainSummary, duration: Duration) {
        metrics.recordPass(summary, duration: duration)
        let snapshot = availability.snapshot
        metrics.recordSinkAvailability(snapshot)
        var line =
            "pending \(summary.remaining?.pending ?? 0); last pass \(summary.result.rawValue) "
            + "(delivered \(summary.delivered), dead \(summary.dead))"
        if snapshot.state == .unavailable {
            line += "; sink unavailable since \(ISO8601.format(unixMilliseconds: snapshot.sinceMilliseconds))"
            if let error = snapshot.lastError { line += " (\(ExternalText.escaped(String(error.prefix(120)))))" }
            if let next = snapshot.nextProbeAtMilliseconds {
                line += ", next probe \(ISO8601.format(unixMilliseconds: next))"
            }
        }
        notifier.status(line)
    }

    func passFailed(_ error: QueueError, duration: Duration) {
        metrics.recordFailedPass(duration: duration)
        notifier.status("last pass failed: \(error.description)")
    }
}
