import EventQueue
import EventQueueBraze
import EventQueueDelivery
import Logging
import NIOPosix
import ServiceLifecycle
import UnixSignals

/// Opens the queue, the sink and the control socket, announces readiness, and runs until SIGTERM/SIGINT
/// (SIGUSR1 launches a pass, SIGHUP reopens the sink's file).
struct Daemon {
    let configuration: DaemonConfiguration
    let logger: Logger

    func run() async throws(DaemonFailure) {
        // Trapped before anything slow (opening the queue migrates and verifies it: seconds on a big file), so a
        // SIGTERM that arrives meanwhile waits in the sequence and stops the daemon cleanly once it runs, instead
        // of killing it mid-start (exit 143); SIGHUP and SIGUSR1 would kill it too.
        let signals = await UnixSignalsSequence(trapping: .sigusr1, .sighup, .sigterm, .sigint)
        let notifier = SystemdNotifier()
        let metrics = DaemonMetrics()
        let (baseSink, rateStatus): (any Sink, (@Sendable () async -> BrazeRateStatus)?)
        do {
            (baseSink, rateStatus) = try makeSink(
                spec: configuration.sinkSpec, apiKeyFile: configuration.apiKeyFile,
                brazeMaxObjects: configuration.brazeMaxObjects, maxInFlight: configuration.drainOptions.maxInFlight,
                maxRequestsPerSecond: configuration.maxRequestsPerSecond, settleDelay: configuration.settleDelay,
                observer: metrics, logger: logger)
        } catch {
            throw .configuration("\(error)")
        }
        let store: QueueStore
        do {
            // A damaged file is refused at start (exit 78, untouched) rather than found by a claim mid-pass.
            var options = configuration.queueOptions
            options.verifyIntegrityOnOpen = true
            store = try QueueStore(path: configuration.databasePath, options: options)
        } catch {
            // The sink's HTTP client must be shut down before it is released (a debug build traps otherwise).
            await baseSink.close()
            throw .queue(error)
        }
        let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let socket: ControlSocket
        do {
            socket = try await ControlSocket.open(path: configuration.socketPath, group: eventLoops)
        } catch {
            await baseSink.close()
            await store.close()
            try? await eventLoops.shutdownGracefully()
            throw error
        }
        do {
            // After the socket: a daemon that cannot listen says so in one line and records nothing.
            try await DaemonLimits.start(store: store, limits: configuration.limits, logger: logger)
        } catch {
            socket.removeSocketFile()
            await baseSink.close()
            await store.close()
            try? await eventLoops.shutdownGracefully()
            throw .queue(error)
        }
        let sink = MeasuredSink(baseSink, metrics: metrics, rateStatus: rateStatus)
        let drainer = Drainer(store: store, sink: sink, options: configuration.drainOptions, logger: logger)
        let coordinator = LaunchCoordinator(
            drainer: drainer,
            observer: DaemonPassObserver(metrics: metrics, notifier: notifier, availability: drainer.availability),
            logger: logger)
        let routes = ControlRoutes(coordinator: coordinator, store: store, sink: sink, metrics: metrics)

        let shutdown = ShutdownTrigger()
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: ControlServer(socket: socket, routes: routes, logger: logger), serviceName: "control"),
            .init(
                service: SignalService(
                    signals: signals, coordinator: coordinator, sink: sink, shutdown: shutdown, logger: logger),
                successTerminationBehavior: .ignore, serviceName: "signals"),
        ]
        if let interval = configuration.drainInterval {
            services.append(
                .init(
                    service: TimerService(interval: interval) { coordinator.launch() },
                    successTerminationBehavior: .ignore, serviceName: "interval"))
        }
        services.append(
            .init(
                service: ClockJumpWatch(coordinator: coordinator, logger: logger),
                successTerminationBehavior: .ignore, serviceName: "clock"))
        services.append(
            .init(
                service: QueueClockTick(store: store, logger: logger), successTerminationBehavior: .ignore,
                serviceName: "queue-clock"))
        if let watchdog = notifier.watchdogInterval {
            services.append(
                .init(
                    service: TimerService(interval: watchdog) { notifier.watchdog() },
                    successTerminationBehavior: .ignore, serviceName: "watchdog"))
        }
        // Shut down in reverse order: the drain loop stops first, while the socket still answers status.
        services.append(
            .init(
                service: DrainService(
                    coordinator: coordinator, shutdownTimeout: configuration.shutdownTimeout, notifier: notifier,
                    logger: logger),
                serviceName: "drain"))
        var groupConfiguration = ServiceGroupConfiguration(services: services, logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout + .seconds(10)
        let group = ServiceGroup(configuration: groupConfiguration)
        shutdown.attach(group)

        let stats = try? await store.stats()
        if let stats { metrics.recordStats(stats) }
        logger.info(
            "queued ready",
            metadata: [
                "db": "\(configuration.databasePath)", "socket": "\(socket.description)", "sink": "\(sink.name)",
                "pending": "\(stats?.pending ?? 0)",
            ])
        notifier.ready()
        notifier.status("pending \(stats?.pending ?? 0); idle")
        if configuration.drainOnStart { coordinator.launch() }

        var failure: (any Error)?
        do {
            try await group.run()
        } catch {
            failure = error
            logger.error("a service failed", metadata: ["error": "\(error)"])
        }
        notifier.stopping()
        socket.removeSocketFile()
        await baseSink.close()
        await store.close()
        try? await eventLoops.shutdownGracefully()
        logger.info("queued stopped")
        if let failure { throw .service("\(failure)") }
    }
}
