// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "EventQueue",
    products: [
        // What an extension-side writer links: the record model (EventQueueRecords, re-exported) and SQLite, nothing
        // else.
        .library(name: "EventQueue", targets: ["EventQueue"]),
        // Sinks and the drain loop: what a consumer (queuectl drain --local, the daemon) links.
        .library(name: "EventQueueDelivery", targets: ["EventQueueDelivery"]),
        // The Braze `/users/track` sink (async-http-client): only consumers link it, never writers.
        .library(name: "EventQueueBraze", targets: ["EventQueueBraze"]),
        .executable(name: "queuectl", targets: ["queuectl"]),
        .executable(name: "queued", targets: ["queued"]),
        .executable(name: "fake-braze", targets: ["fake-braze"]),
        .executable(name: "eventqueue-bench", targets: ["eventqueue-bench"]),
        .executable(name: "eventqueue-minimal-writer", targets: ["eventqueue-minimal-writer"]),
        .executable(name: "eventqueue-storm-writer", targets: ["eventqueue-storm-writer"]),
        .executable(name: "eventqueue-example-writer", targets: ["eventqueue-example-writer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Benchmarks only (latency percentiles); never a dependency of the libraries.
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // `swift package generate-documentation` (the DocC reference of the writer library, scripts/docs); a
        // command plugin: nothing it holds is linked into any product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Migrations/*.sql and the release version (the VERSION file) as Swift source, before every build
        // (scripts/embed-build-info).
        .plugin(
            name: "EmbedMigrationsPlugin",
            capability: .buildTool(),
            path: "Sources/EmbedMigrationsPlugin"
        ),
        // The record model: JSON, Braze records and their rules, ISO 8601 time. Standard library and Glibc only,
        // so that the fuzz harness (scripts/fuzz) builds it alone; `EventQueue` re-exports it to writers.
        .target(name: "EventQueueRecords"),
        // The writers' line (a ticket lock in the `<queue>-turn` file's page, futex waits): C, for the atomics and
        // futex calls on shared memory; libc only. Part of the writer library (Storage/WriteTurn.swift).
        .target(name: "CWriteTurn"),
        .target(
            name: "EventQueue",
            dependencies: ["EventQueueRecords", "CSQLite", "CWriteTurn"],
            // A symlink to Migrations/, only so that adding a migration makes SwiftPM plan the build again
            // (EmbedMigrationsPlugin); the plugin embeds the files.
            exclude: ["Migrations"],
            plugins: ["EmbedMigrationsPlugin"]
        ),
        .target(
            name: "EventQueueDelivery",
            dependencies: [
                "EventQueue",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "EventQueueBraze",
            dependencies: [
                "EventQueue",
                "EventQueueDelivery",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What both command-line tools share: the drain flags (`@OptionGroup`) and the control socket's HTTP/1.1
        // client (POSIX calls only, so `queuectl enqueue` loads no NIO, AsyncHTTPClient or Foundation). Never a
        // dependency of the writer library: it stays free of ArgumentParser.
        .target(
            name: "EventQueueCommandLine",
            dependencies: [
                "EventQueue",
                "EventQueueDelivery",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A local stand-in for Braze that enforces the documented contract and injects faults: test support, under
        // Tests/ (used by the tests, the benchmarks and CI's scripts), never installed by the package.
        .target(
            name: "FakeBraze",
            dependencies: [
                "EventQueueRecords",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/FakeBraze"
        ),
        .executableTarget(name: "fake-braze", dependencies: ["FakeBraze"], path: "Tests/fake-braze"),
        .executableTarget(
            name: "queued",
            dependencies: [
                "EventQueue",
                "EventQueueDelivery",
                "EventQueueBraze",
                "EventQueueCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "queuectl",
            dependencies: [
                "EventQueue",
                "EventQueueDelivery",
                // `queuectl drain` talks to the daemon's control socket through its HTTP/1.1 client.
                "EventQueueCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // H hosts pacing their requests to one Braze workspace with the daemon's `BrazeRatePolicy`, on a simulated
        // clock: a benchmark and test tool (`eventqueue-bench fleet`, BrazeFleetSimulationTests), never shipped.
        .target(
            name: "FleetSimulation",
            dependencies: ["EventQueue", "EventQueueBraze"],
            path: "Benchmarks/FleetSimulation"
        ),
        .executableTarget(
            name: "eventqueue-bench",
            dependencies: [
                "EventQueue", "EventQueueDelivery", "EventQueueBraze", "FleetSimulation", "FakeBraze", "CSQLite",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/eventqueue-bench"
        ),
        .executableTarget(
            name: "eventqueue-minimal-writer",
            dependencies: ["EventQueue"],
            path: "Benchmarks/eventqueue-minimal-writer"
        ),
        // The chaos tests' library writer: loops enqueueing marked records, logging attempt/ok lines.
        .executableTarget(
            name: "eventqueue-storm-writer",
            dependencies: ["EventQueue"],
            path: "Benchmarks/eventqueue-storm-writer"
        ),
        // The Swift writer of docs/WRITERS.md, built with everything so that it keeps compiling.
        .executableTarget(
            name: "eventqueue-example-writer",
            dependencies: ["EventQueue"],
            path: "Examples/SwiftWriter"
        ),
        // Helpers the test targets share: temporary directories, running the built binaries.
        .target(
            name: "EventQueueTestSupport", dependencies: ["EventQueueRecords"], path: "Tests/EventQueueTestSupport"),
        // A power cut under SQLite (docs/RELIABILITY.md, "Hardening V"): a VFS over the unix one that remembers what
        // was written but not synced and throws it away at a simulated cut. C, for SQLite's VFS API; only test
        // targets depend on it, never a product.
        .target(name: "CPowerCutVFS", dependencies: ["CSQLite"], path: "Tests/CPowerCutVFS"),
        .testTarget(
            name: "EventQueueRecordsTests",
            dependencies: ["EventQueueRecords", "EventQueueTestSupport"]
        ),
        // The writers' line's model test (WriteTurnModelTests): write_turn.c itself over a simulated kernel, with
        // writers that die or stop at any kernel call and a hostile group member. C, for its coroutines (ucontext);
        // only a test target depends on it.
        .target(name: "CWriteTurnModel", dependencies: ["CWriteTurn"], path: "Tests/CWriteTurnModel"),
        .testTarget(
            name: "EventQueueTests",
            dependencies: [
                "EventQueue", "CSQLite", "CWriteTurn", "CWriteTurnModel", "CPowerCutVFS", "EventQueueTestSupport",
            ]
        ),
        .testTarget(
            name: "EventQueueDeliveryTests",
            dependencies: [
                "EventQueueDelivery", "EventQueue", "EventQueueTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "EventQueueBrazeTests",
            dependencies: [
                "EventQueueBraze", "FleetSimulation", "FakeBraze", "EventQueueDelivery", "EventQueue",
                "EventQueueTestSupport",
            ]
        ),
        .testTarget(
            name: "EventQueueCommandLineTests",
            dependencies: ["EventQueueCommandLine", "EventQueueDelivery", "EventQueue", "EventQueueTestSupport"]
        ),
        .testTarget(
            name: "queuedTests",
            dependencies: [
                "FakeBraze", "EventQueue", "EventQueueDelivery", "EventQueueCommandLine", "EventQueueTestSupport",
            ]
        ),
        .testTarget(
            name: "queuectlTests",
            dependencies: ["EventQueue", "EventQueueDelivery", "EventQueueCommandLine", "EventQueueTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
