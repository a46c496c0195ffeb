import ArgumentParser
import EventQueue
import EventQueueDelivery

/// `queuectl drain` without `--local`: the launch goes to the daemon, which owns the sink and the schedule.
struct RemoteDrain {
    let socketPath: String
    let json: Bool
    /// The queue file the caller means; its owner is the daemon's user (see `SocketTrust`).
    var queuePath: String?

    static let unavailable: Int32 = 69
    static let refused: Int32 = 77

    func run(wait: Bool) async throws {
        let client = DaemonClient(socketPath: socketPath)
        do {
            try SocketTrust(socketPath: socketPath, queuePath: queuePath).verify()
        } catch {
            throw fail("refusing to talk to \(socketPath): \(error)", status: Self.refused)
        }
        do {
            if wait {
                try await follow(client)
            } else {
                try await client.launch()
            }
        } catch is DaemonClient.Unreachable {
            throw fail(
                "no queued daemon listening on \(socketPath): start it, or drain in this process with --local",
                status: Self.unavailable)
        } catch let refusal as DaemonClient.Refused {
            throw fail("queued refused the launch (HTTP \(refusal.status)): \(refusal.message)", status: Self.refused)
        }
    }

    private func follow(_ client: DaemonClient) async throws {
        var summary: JSONObject?
        var failure: String?
        try await client.launchAndWait { line in
            guard let object = line.objectValue else { return }
            switch object["event"]?.stringValue {
            case "progress":
                writeStandardError(
                    "batch \(Self.int(object, "batches")): delivered \(Self.int(object, "delivered")), retried "
                        + "\(Self.int(object, "retried")), dead \(Self.int(object, "dead")), "
                        + "in flight \(Self.int(object, "in_flight"))\n")
            case "summary":
                summary = object
            case "error":
                failure = object["message"]?.stringValue ?? "unknown error"
            default:
                break
            }
        }
        guard let summary else {
            throw fail("the daemon's pass did not finish: \(failure ?? "the connection closed")", status: 74)
        }
        if json {
            var printed = JSONObject()
            for member in summary where member.key != "event" && member.key != "lock_holder" {
                printed[member.key] = member.value
            }
            writeStandardOutput(JSONValue.object(printed).serialized + "\n")
        } else {
            let remaining: (Int, Int, Int)? =
                summary.contains(key: "pending")
                ? (Self.int(summary, "pending"), Self.int(summary, "leased"), Self.int(summary, "dead_total")) : nil
            writeStandardOutput(
                Drain.describe(
                    delivered: Self.int(summary, "delivered"), retried: Self.int(summary, "retried"),
                    dead: Self.int(summary, "dead"), remaining: remaining, halt: summary["halt"]?.stringValue,
                    lockOwner: summary["lock_holder"]?.stringValue))
        }
        let result = summary["result"]?.stringValue.flatMap(DrainResult.init(rawValue:))
        guard let result else { throw fail("the daemon sent a summary without a known result", status: 74) }
        if result != .allDelivered { throw ExitCode(result.exitCode) }
    }

    private static func int(_ object: JSONObject, _ key: String) -> Int {
        object[key]?.numberValue?.integerValue.map { Int($0) } ?? 0
    }
}
