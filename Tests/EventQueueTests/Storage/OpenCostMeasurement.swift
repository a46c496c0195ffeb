import Foundation
import Testing

@testable import EventQueue

/// Measures what an open costs and what the path and schema checks add to it (printed, not asserted: timings on
/// a shared machine are not a pass/fail matter). Runs with EVENTQUEUE_MEASURE_OPEN=1 only.
@Suite struct OpenCostMeasurement {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["EVENTQUEUE_MEASURE_OPEN"] == "1"))
    func writerOpenCost() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let seed = try QueueWriter(path: path)
        try seed.enqueue(event("a", user: "u1"))
        let rounds = 2_000
        func perCall(_ body: () throws -> Void) rethrows -> Double {
            let start = ContinuousClock.now
            for _ in 0..<rounds { try body() }
            let elapsed = ContinuousClock.now - start
            return Double(elapsed.components.attoseconds) / 1e12 / Double(rounds) + Double(elapsed.components.seconds)
                * 1e6 / Double(rounds)
        }
        // Keep one connection open, as an extension's neighbours would: the opens measured do not create the WAL.
        let open = try perCall { try QueueWriter(path: path).close() }
        let names = try perCall { try QueueSchema.verifyNames(seed.file.connection, version: Migrations.latestVersion) }
        let inspect = try perCall { _ = try QueuePath.inspect(path) }
        let full = try perCall { try QueueSchema.verify(seed.file.connection, version: Migrations.latestVersion) }
        seed.close()
        print(
            String(
                format: "open cost: writer open+close %.1f us, of which path check %.1f us, names check %.1f us; "
                    + "full schema comparison (consumers) %.1f us",
                open, inspect, names, full))
        // A file the next release migrated additively (scripts/version-matrix's index): a writer of this release
        // reads `schema_additions` and asks SQLite's pragmas about the recorded index (issue 32 #4).
        let next = Migrations.latestVersion + 1
        let connection = try Connection(path: path, busyTimeoutMilliseconds: 1000)
        try Migrations.migrate(
            connection, to: next,
            using: Migrations.embedded + [
                Migration(
                    version: next, name: "next",
                    sql: "CREATE INDEX records_created ON records (created_at_ms); "
                        + "INSERT INTO schema_levels VALUES (\(next), 1, 1, '9.0.0');")
            ])
        connection.close()
        let keep = try QueueWriter(path: path)
        let newer = try perCall { try QueueWriter(path: path).close() }
        keep.close()
        print(String(format: "open cost: writer open+close on a newer file (a recorded index vetted) %.1f us", newer))
    }
}
