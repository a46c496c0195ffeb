// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "EventQueue",
    products: [
        // What an extension-side writer links: SQLite and nothing else.
        .library(name: "EventQueue", targets: ["EventQueue"]),
        // Sinks and the drain loop: what a consumer (queuectl drain --local, the daemon) links.
        .library(name: "EventQueueDelivery", targets: ["EventQueueDelivery"]),
        .executable(name: "queuectl", targets: ["queuectl"]),
        .executable(name: "eventqueue-bench", targets: ["eventqueue-bench"]),
        .executable(name: "eventqueue-minimal-writer", targets: ["eventqueue-minimal-writer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .executableTarget(name: "EmbedMigrations"),
        .plugin(
            name: "EmbedMigrationsPlugin",
            capability: .buildTool(),
            dependencies: ["EmbedMigrations"],
            path: "Sources/EmbedMigrationsPlugin"
        ),
        .target(
            name: "EventQueue",
            dependencies: ["CSQLite"],
            plugins: ["EmbedMigrationsPlugin"]
        ),
        .target(
            name: "EventQueueDelivery",
            dependencies: [
                "EventQueue",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "queuectl",
            dependencies: [
                "EventQueue",
                "EventQueueDelivery",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "eventqueue-bench",
            dependencies: ["EventQueue", "CSQLite"],
            path: "Benchmarks/eventqueue-bench"
        ),
        .executableTarget(
            name: "eventqueue-minimal-writer",
            dependencies: ["EventQueue"],
            path: "Benchmarks/eventqueue-minimal-writer"
        ),
        .testTarget(
            name: "EventQueueTests",
            dependencies: ["EventQueue", "CSQLite"]
        ),
        .testTarget(
            name: "EventQueueDeliveryTests",
            dependencies: ["EventQueueDelivery", "EventQueue"]
        ),
        .testTarget(
            name: "queuectlTests",
            dependencies: ["EventQueue", "EventQueueDelivery"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
