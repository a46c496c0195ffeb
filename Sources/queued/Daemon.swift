import EventQueue
import EventQueueBraze
import EventQueueDelivery
import Foundation
import EventQueueCommandLine
import Logging
import NIOPosix
import ServiceLifecycle
import UnixSignals

extension Queued {
    /// Opens the queue, the sink and the control socket, announces readiness, and runs until SIGTERM/SIGINT.
    /// `queueOptions` and `limits` were checked (`configuration()`) before anything is opened.
    func serve(queueOptions: QueueOptions, limits: QueueLimits) async throws(DaemonFailure) {
        let databasePath = QueueEnvironment.databasePath(explicit: db)
        let socketPath = QueueEnvironment.socketPath(explicit: socket)
        let shutdownTimeout = Duration.milliseconds(Int64(self.shutdownTimeout * 1000))
        let logger = Logger(label: "queued")
        // Trapped before anything slow (opening the queue migrates and verifies it: seconds on a big file), so a
        // SIGTERM that arrives meanwhile waits in the sequence and stops the daemon cleanly once it runs, instead
        // of killing it mid-start (exit 143); SIGHUP and SIGUSR1 would kill it too.
        let signals = await UnixSignalsSequence(trapping: .sigusr1, .sighup, .sigterm, .sigint)
        let notifier = SystemdNotifier()
        let metrics = DaemonMetrics()
        let baseSink = try makeSink(observer: metrics, logger: logger)
        let store: QueueStore
        do {
            // A damaged file is refused at start (exit 78, untouched) rather than found by a claim mid-pass.
            var options = queueOptions
            options.verifyIntegrityOnOpen = true
            store = try QueueStore(path: databasePath, options: options)
        } catch {
            // The sink's HTTP client must be shut down before it is released (a debug build traps otherwise).
            await baseSink.close()
            throw .queue(error)
        }
        let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let socket: ControlSocket
        do throws(DaemonFailure) {
            socket = try await ControlSocket.open(path: socketPath, group: eventLoops)
            do {
                // After the socket: a daemon that cannot listen says so in one line and records nothing.
                try await Self.startLimits(store: store, limits: limits, logger: logger)
            } catch {
                socket.removeSocketFile()
                throw .queue(error)
            }
        } catch {
            await baseSink.close()
            await store.close()
            try? await eventLoops.shutdownGracefully()
            throw error
        }
        let sink = MeasuredSink(baseSink, metrics: metrics)
        let drainer = Drainer(store: store, sink: sink, options: flags.drainOptions, logger: logger)
        let coordinator = LaunchCoordinator(
            drainer: drainer,
            observer: DaemonPassObserver(metrics: metrics, notifier: notifier, availability: drainer.availability),
            logger: logger)
        let routes = ControlRoutes(coordinator: coordinator, store: store, sink: sink, metrics: metrics)

        /// A service whose end does not stop the daemon.
        func background(_ service: some Service, _ name: String) -> ServiceGroupConfiguration.ServiceConfiguration {
            .init(service: service, successTerminationBehavior: .ignore, serviceName: name)
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: ControlServer(socket: socket, routes: routes, logger: logger), serviceName: "control")
        ]
        if let interval = drainInterval.map({ Duration.milliseconds(Int64($0 * 1000)) }) {
            services.append(background(TimerService(interval: interval) { coordinator.launch() }, "interval"))
        }
        let clockWatch = ClockJumpWatch(coordinator: coordinator, logger: logger)
        services.append(background(TimerService(interval: .seconds(1)) { clockWatch.check() }, "clock"))
        // A checkpoint of the queue clock (`QueueAdmin.tickQueueClock`) every minute: the max age counts a record's
        // age from the first checkpoint that saw it, so this is how late expiry may be while records are enqueued
        // and no pass runs (each pass's start takes one too): late by at most a minute on a limit of days, and one
        // small write a minute only while writers write (an idle queue writes nothing).
        services.append(
            background(
                TimerService(interval: .seconds(60)) {
                    do throws(QueueError) {
                        try await store.withConsumer { consumer throws(QueueError) in
                            _ = try consumer.admin.tickQueueClock()
                        }
                    } catch {
                        // The next tick or pass takes the checkpoint: a record's age is then counted from it.
                        logger.warning(
                            "could not take a checkpoint of the queue clock",
                            metadata: ["error": "\(error.description)"])
                    }
                },
                "queue-clock"))
        if let watchdog = notifier.watchdogInterval {
            services.append(background(TimerService(interval: watchdog) { notifier.watchdog() }, "watchdog"))
        }
        // Shut down in reverse order: the drain loop stops first, while the socket still answers status.
        services.append(
            .init(
                service: DrainService(
                    coordinator: coordinator, shutdownTimeout: shutdownTimeout, notifier: notifier,
                    logger: logger),
                serviceName: "drain"))
        var groupConfiguration = ServiceGroupConfiguration(services: services, logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = shutdownTimeout + .seconds(10)
        let group = ServiceGroup(configuration: groupConfiguration)
        // The signals (trapped above, before READY=1) are served beside the group until it has stopped: SIGUSR1
        // launches a pass; SIGHUP reopens the sink's file (after a log rotation, as log daemons do; its default
        // action would end the daemon and leave its socket); SIGTERM and SIGINT start the graceful shutdown (asked
        // before the group runs, it starts and stops the services all the same).
        let signalLoop = Task {
            for await signal in signals {
                if signal == .sigusr1 {
                    logger.debug("launch by SIGUSR1")
                    coordinator.launch()
                } else if signal == .sighup {
                    logger.info(
                        "SIGHUP: reopening the sink's file before the next batch", metadata: ["sink": "\(sink.name)"])
                    sink.reopen()
                } else {
                    logger.info("stopping on \(signal)")
                    await group.triggerGracefulShutdown()
                }
            }
        }

        let stats = try? await store.stats()
        if let stats { metrics.recordStats(stats) }
        logger.info(
            "queued ready",
            metadata: [
                "db": "\(databasePath)", "socket": "\(socket.description)", "sink": "\(sink.name)",
                "pending": "\(stats?.pending ?? 0)",
            ])
        notifier.ready()
        notifier.status("pending \(stats?.pending ?? 0); idle")
        if drainOnStart { coordinator.launch() }

        var failure: (any Error)?
        do {
            try await group.run()
        } catch {
            failure = error
            logger.error("a service failed", metadata: ["error": "\(error)"])
        }
        // Ended before the sink closes, so no SIGHUP reopens it meanwhile.
        signalLoop.cancel()
        await signalLoop.value
        notifier.stopping()
        socket.removeSocketFile()
        await baseSink.close()
        await store.close()
        try? await eventLoops.shutdownGracefully()
        logger.info("queued stopped")
        if let failure { throw .service("\(failure)") }
    }

    /// The daemon's start with the limits: it records them in the queue file, so that every writer of this release
    /// enforces them from its next enqueue on, then enforces them once itself (what older and foreign writers
    /// stored past the limit while no daemon ran, records that aged past the max age meanwhile), and starts
    /// watching what the queue gives up, so each pass logs what grew since the one before.
    private static func startLimits(store: QueueStore, limits: QueueLimits, logger: Logger) async throws(QueueError) {
        let (enforcement, drops) = try await store.withConsumer { consumer throws(QueueError) in
            let admin = consumer.admin
            try admin.recordLimits(limits)
            var enforcement = try admin.enforceLimits()
            enforcement.queueBytes = try admin.queueBytes()
            try admin.watchDrops()
            return (enforcement, try admin.drops())
        }
        logger.info(
            "limits recorded in the queue file",
            metadata: [
                "max_queue_bytes": "\(limits.maxQueueBytes)", "when_full": "\(limits.whenFull.rawValue)",
                "max_age_seconds": "\(limits.maxAgeSeconds)", "queue_bytes": "\(enforcement.queueBytes)",
                "dropped_oldest": "\(drops.oldest)", "refused": "\(drops.refused)", "expired": "\(drops.expired)",
            ])
        if enforcement.expired > 0 {
            logger.warning(
                "expired records pending longer than the max age: they are dead letters (queuectl dead list)",
                metadata: ["count": "\(enforcement.expired)", "max_age_seconds": "\(limits.maxAgeSeconds)"])
        }
        if enforcement.dropped > 0 {
            logger.warning(
                "dropped the oldest records to keep the queue within its size limit (--when-full drop-oldest)",
                metadata: ["count": "\(enforcement.dropped)", "max_queue_bytes": "\(limits.maxQueueBytes)"])
        }
    }

    /// Builds the sink named by `--sink`: `jsonl:PATH` and `null` (EventQueueDelivery's), or `braze:BASE_URL`, whose
    /// key comes from `--api-key-file`, else the systemd credential `braze-api-key` (`$CREDENTIALS_DIRECTORY`), else
    /// `$BRAZE_API_KEY`, and is never logged.
    func makeSink(observer: any BrazeRequestObserver, logger: Logger) throws(DaemonFailure) -> any Sink {
        let sink: any Sink
        if self.sink.hasPrefix("braze:") {
            let baseURL = String(self.sink.dropFirst("braze:".count))
            let key: BrazeAPIKey
            do {
                try BrazeSink.validate(baseURL: baseURL)
                key = try BrazeAPIKey.resolve(apiKeyFile: apiKeyFile, environment: ProcessInfo.processInfo.environment)
            } catch {
                throw .configuration("\(error)")
            }
            sink = BrazeSink(
                baseURL: baseURL, apiKey: key, maxObjectsPerRequest: brazeMaxObjects,
                maxInFlight: flags.drainOptions.maxInFlight,
                maxRequestsPerSecond: maxRequestsPerSecond, settleDelay: .milliseconds(Int64(settleDelay * 1000)),
                observer: observer, logger: logger
            )
        } else {
            do {
                sink = try SinkSpec(parsing: self.sink).makeSink()
            } catch {
                throw .configuration(error.description + ", or braze:BASE_URL")
            }
        }
        logger.debug("sink ready", metadata: ["sink": "\(sink.name)"])
        return sink
    }
}
