import ServiceLifecycle

/// Runs `action` every `interval`: a launch (`--drain-interval`) or a ping of systemd's watchdog.
struct TimerService: Service {
    let interval: Duration
    let action: @Sendable () -> Void

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let interval = self.interval
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                return
            }
            action()
        }
    }
}
