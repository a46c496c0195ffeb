import EventQueue
import EventQueueDelivery

/// Turns the launch coordinator's pass events into the daemon's metrics and systemd status lines.
struct DaemonPassObserver: LaunchObserver {
    let metrics: DaemonMetrics
    let notifier: SystemdNotifier

    func recordsInFlight(_ count: Int) {
        metrics.recordInFlight(count)
    }

    func passFinished(_ summary: DrainSummary, duration: Duration) {
        metrics.recordPass(summary, duration: duration)
        notifier.status(
            "pending \(summary.remaining?.pending ?? 0); last pass \(summary.result.rawValue) "
                + "(delivered \(summary.delivered), dead \(summary.dead))")
    }

    func passFailed(_ error: QueueError, duration: Duration) {
        metrics.recordFailedPass(duration: duration)
        notifier.status("last pass failed: \(error.description)")
    }
}
