import Glibc
import Testing

@testable import EventQueue

/// After a SIGKILL the restarted daemon hands back its predecessor's leases at once instead of waiting out the
/// lease: only when the holder no longer runs on this host, never a live holder's.
@Suite struct LeaseTakeoverTests {
    private func enqueueAndClaim(_ path: String, as owner: String, count: Int) throws -> Claim {
        let writer = try QueueWriter(path: path)
        defer { writer.close() }
        _ = try writer.enqueue(
            contentsOf: (0..<count).map {
                Record.event("e\($0)", user: .externalID("\(owner)-u\($0)"), properties: [:])
            })
        let consumer = try QueueConsumer(path: path, consumerID: owner)
        defer { consumer.close() }
        return try consumer.claim(limit: count, leaseMilliseconds: 60_000)
    }

    @Test func leasesOfADeadProcessAreReleasedAndALiveOnesKept() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let host = QueueConsumer.hostName()
        // pid 2^22+1 is above Linux's pid_max limit: no such process.
        _ = try enqueueAndClaim(path, as: "\(host):4194305:dead", count: 3)
        // This process, with its real start time: alive.
        let me = "\(host):\(getpid()):live@\(ProcessIdentity.ownStartTime ?? 0)"
        _ = try enqueueAndClaim(path, as: me, count: 2)
        // Another host's lease: never judged from here.
        _ = try enqueueAndClaim(path, as: "elsewhere.example:4194305:other", count: 1)
        let restarted = try QueueConsumer(path: path)
        defer { restarted.close() }
        #expect(try restarted.releaseLeasesOfDeadProcesses() == 3)
        #expect(try restarted.admin.stats().leased == 3, "the live holder's 2 and the other host's 1 stay leased")
        #expect(try restarted.claim(limit: 10, leaseMilliseconds: 60_000).records.count == 3)
    }

    /// A pid reused by a later process: the start time in the owner id no longer matches, so the holder is gone.
    @Test func aReusedPidIsNotMistakenForTheHolder() throws {
        let directory = Scratch()
        let path = directory.file("q.db")
        let host = QueueConsumer.hostName()
        let start = try #require(ProcessIdentity.ownStartTime)
        _ = try enqueueAndClaim(path, as: "\(host):\(getpid()):old@\(start &+ 1)", count: 2)
        let restarted = try QueueConsumer(path: path)
        defer { restarted.close() }
        #expect(try restarted.releaseLeasesOfDeadProcesses() == 2)
        #expect(ProcessIdentity.isRunning(owner: "\(host):\(getpid()):x@\(start)") == true)
        #expect(ProcessIdentity.isRunning(owner: "\(host):\(getpid()):x@\(start &+ 1)") == false)
        #expect(ProcessIdentity.isRunning(owner: "\(host):1:init") != false, "an id without a start time: pid only")
    }
}
