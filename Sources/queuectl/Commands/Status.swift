import ArgumentParser
import EventQueue

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Counts of pending, leased and dead records, the oldest pending record's age, file sizes.")

    @Flag(help: "Print JSON: pending, leased, dead, oldest_pending_age_seconds, db_bytes, wal_bytes, schema_version.")
    var json = false

    @OptionGroup var queue: QueueOptionGroup

    func run() throws {
        let consumer = try queue.openConsumer()
        defer { consumer.close() }
        let now = WallClock.nowMilliseconds()
        let stats = try withQueue { () throws(QueueError) in try consumer.stats(now: now) }
        if json {
            writeStandardOutput(JSONOutput.stats(stats, path: consumer.path).serialized + "\n")
            return
        }
        var lines = [
            "queue:          \(consumer.path)",
            "schema version: \(stats.schemaVersion)",
            "pending:        \(stats.pending)",
            "leased:         \(stats.leased)",
            "dead:           \(stats.dead)",
        ]
        if let age = stats.oldestPendingAgeSeconds {
            lines.append("oldest pending: \(Self.formatSeconds(age)) ago")
        }
        if let retry = stats.nextRetryAtMilliseconds {
            lines.append("next retry:     in \(Self.formatSeconds(Double(retry - now) / 1000))")
        }
        lines.append("file size:      \(stats.databaseBytes) bytes (wal \(stats.walBytes) bytes)")
        writeStandardOutput(lines.joined(separator: "\n") + "\n")
    }

    static func formatSeconds(_ seconds: Double) -> String {
        if seconds < 120 { return "\(Int(seconds.rounded())) s" }
        if seconds < 7200 { return "\(Int((seconds / 60).rounded())) min" }
        return "\(Int((seconds / 3600).rounded())) h"
    }
}
