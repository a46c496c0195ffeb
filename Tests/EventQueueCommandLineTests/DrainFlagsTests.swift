import ArgumentParser
import EventQueueDelivery
import Testing

@testable import EventQueueCommandLine

/// The drain flags `queuectl drain` and `queued` share: their defaults, and their ranges checked in `validate()`
/// (exit 64 with the range, the message unchanged from when each tool checked them itself).
@Suite struct DrainFlagsTests {
    @Test func theDefaultsAreTheDocumentedOnes() throws {
        let flags = try DrainFlags.parse([])
        #expect(flags.batchSize == 100)
        #expect(flags.leaseSeconds == 60)
        #expect(flags.maxAttempts == 10)
        #expect(flags.maxInFlight == DrainOptions.defaultMaxInFlight)
        #expect(flags.drainOptions == DrainOptions(maxInFlight: DrainOptions.defaultMaxInFlight))
        #expect(flags.leaseNote(tool: "queued") == nil)
    }

    @Test(arguments: [
        (["--batch-size", "0"], "--batch-size must be 1 to 10000 (got 0)"),
        (["--lease-seconds", "86401"], "--lease-seconds must be 1 to 86400 (got 86401)"),
        (["--max-attempts=-1"], "--max-attempts must be 1 to 1000000 (got -1)"),
        (["--max-in-flight", "1025"], "--max-in-flight must be 1 to 1024 (got 1025)"),
    ])
    func aValueOutOfItsRangeFailsValidationWithTheRange(arguments: [String], message: String) {
        do {
            _ = try DrainFlags.parse(arguments)
            Issue.record("\(arguments) was accepted")
        } catch {
            #expect(DrainFlags.message(for: error) == message)
            #expect(DrainFlags.exitCode(for: error) == ExitCode(ExitStatus.usage.rawValue))
        }
    }

    @Test func aLeaseLongerThanALeaseCanLastIsShortenedWithANote() throws {
        let flags = try DrainFlags.parse(["--lease-seconds", "5000"])
        #expect(flags.drainOptions.leaseMilliseconds == 900_000)
        #expect(flags.leaseNote(tool: "queuectl")?.hasPrefix("queuectl: note: --lease-seconds 5000 is above") == true)
    }
}
