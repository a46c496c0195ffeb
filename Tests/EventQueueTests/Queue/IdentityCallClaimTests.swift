import Testing

@testable import EventQueue

/// Issue 41: an identity call is a barrier in the streams of both users it names. It is claimed only once no
/// earlier live row of either is left; while it is live, or dead (Braze refused it), every later row of either
/// waits; `dead retry` or `dead purge` of it lets them go.
@Suite struct IdentityCallClaimTests: QueueFileSuite {
    let directory = Scratch()
    let device = UserIdentity.alias(name: "dev-1", label: "device_id")

    func claim(_ consumer: QueueConsumer) throws -> Claim {
        try consumer.claim(limit: 100, leaseMilliseconds: 60_000)
    }

    @Test func anIdentifyWaitsForBothUsersEarlierRowsAndHoldsBothUsersLaterOnes() throws {
        let aliasEvents = try enqueue((1...5).map { Record.event("a\($0)", user: device) })
        let userEvent = try enqueue([event("u-early", user: "U1")])
        let identify = try enqueue([.identify(externalID: "U1", device)])
        let later = try enqueue((1...5).map { event("u\($0)", user: "U1") } + [Record.event("a-late", user: device)])
        let other = try enqueue([event("other", user: "U2")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let first = try claim(consumer)
        #expect(first.records.map(\.id) == aliasEvents + userEvent + other)
        #expect(try claim(consumer).records.isEmpty, "the identify waits for both users' requests")
        #expect(try consumer.ack(first.records.map(\.id), lease: first.lease) == 7)

        let second = try claim(consumer)
        #expect(second.records.map(\.id) == identify, "alone: both users' later rows wait")
        #expect(second.records.first?.kind == .identify)
        #expect(try claim(consumer).records.isEmpty, "nor while it is in flight")
        #expect(try consumer.ack(identify, lease: second.lease) == 1)
        #expect(try claim(consumer).records.map(\.id) == later)
    }

    @Test func aDeadIdentityCallHoldsBothUsersUntilPurged() throws {
        let merge = try enqueue([.merge(.externalID("old"), into: .externalID("kept"))])
        let later = try enqueue([event("k", user: "kept"), event("o", user: "old")])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let first = try claim(consumer)
        #expect(first.records.map(\.id) == merge)
        #expect(try consumer.reject(merge, lease: first.lease, reason: "Braze answered 400") == 1)
        #expect(try claim(consumer).records.isEmpty, "both users are held by the dead merge")
        let stats = try consumer.admin.stats(includingErasures: true)
        #expect(
            stats.heldUsers == 2 && stats.heldUserKeys == ["external_id:kept", "external_id:old"], "status shows them")
        #expect(try consumer.admin.purgeDead(ids: merge) == merge)
        #expect(try claim(consumer).records.map(\.id) == later)
        #expect(try consumer.admin.stats(includingErasures: true).heldUsers == 0)
    }

    @Test func twoCallsNamingOneUserAreNeverInFlightTogether() throws {
        let calls = try enqueue([
            .identify(externalID: "U1", device), .identify(externalID: "U2", .alias(name: "dev-2", label: "device_id")),
            .merge(device, into: .externalID("U3")),
        ])
        let consumer = try QueueConsumer(path: path)
        defer { consumer.close() }
        let first = try claim(consumer)
        #expect(first.records.map(\.id) == Array(calls.prefix(2)), "calls of different users share a claim")
        #expect(try consumer.ack(first.records.map(\.id), lease: first.lease) == 2)
        #expect(try claim(consumer).records.map(\.id) == [calls[2]])
    }

    /// docs/SCHEMA.md's contract: a consumer of 1.3.0 (read level 2) would send an identity call to /users/track, so a
    /// file that can hold one requires read level 3, which it does not have: it refuses the file at start.
    @Test func aFileThatHoldsIdentityCallsRequiresAReadLevelOlderDaemonsLack() throws {
        _ = try enqueue([.identify(externalID: "U1", device)])
        let raw = try RawDatabase(path: path)
        let levels = try raw.rows("SELECT read_level, release FROM schema_levels WHERE version = 8")
        #expect(levels == [["3", "1.4.0"]])
        #expect(SchemaContract.readLevel == 3)
    }
}
